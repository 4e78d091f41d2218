// tunectl web view: each page drawn from /api/... (the JSON of the CLI's -o json) with the DOM
// and Debian's dygraphs. No build step. Data is put in the page with textContent only (never as
// HTML). Every number shown carries its exact value in data-value, for tests and copying.
'use strict';

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
let pollTimer = null;

// --- small helpers -------------------------------------------------------------------------
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path) {
  const r = await fetch(path, {credentials: 'same-origin', headers: {Accept: 'application/json'}});
  let body = null;
  try { body = await r.json(); } catch (e) { body = {message: 'not JSON: HTTP ' + r.status}; }
  if (r.status === 401) {
    location.href = '/login?next=' + encodeURIComponent(location.pathname + location.search);
    throw new ApiError(401, body.message);
  }
  if (!r.ok) throw new ApiError(r.status, body.message || ('HTTP ' + r.status));
  return body;
}

// 4 significant digits, no exponent for everyday magnitudes.
function fmt(v) {
  if (v === null || v === undefined) return '–';
  if (typeof v !== 'number') return String(v);
  if (!isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e9 || a < 1e-4)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}
// A ratio as an effect: 1.123 -> "+12.3%".
function effect(ratio) {
  if (ratio === null || ratio === undefined) return '–';
  const p = (ratio - 1) * 100;
  return (p >= 0 ? '+' : '') + p.toFixed(1) + '%';
}
function num(v, field, extra) {
  return el('td', Object.assign({class: 'num', 'data-field': field,
                                 'data-value': v === null || v === undefined ? '' : v}, extra || {}),
            fmt(v));
}
function badge(text) {
  return text ? el('span', {class: 'badge ' + String(text).split(' ')[0]}, text) : el('span', {class: 'muted'}, '–');
}
function link(href, text) { return el('a', {href}, text); }
function table(headers, rows, attrs) {
  return el('table', attrs || {}, el('thead', {}, el('tr', {}, headers.map(h => el('th', {}, h)))),
            el('tbody', {}, rows));
}
function kv(pairs) {
  const dl = el('dl', {class: 'kv'});
  for (const [k, v] of pairs) {
    if (v === undefined) continue;
    dl.appendChild(el('dt', {}, k));
    dl.appendChild(el('dd', {}, v === null ? el('span', {class: 'muted'}, '–') : v));
  }
  return dl;
}
function params(p) {
  if (!p) return '–';
  return Object.entries(p).map(([k, v]) => k + '=' + v).join(' ');
}
function setPage(title, ...kids) {
  document.title = 'tunectl · ' + title;
  main.replaceChildren(...kids);
}
function showError(e) {
  main.replaceChildren(el('h1', {}, 'Cannot show this page'),
                       el('p', {class: 'error', id: 'page-error'}, e.message));
}
function poll(fn, ms) {
  if (pollTimer) clearTimeout(pollTimer);
  pollTimer = setTimeout(() => fn().catch(showError), ms);
}
function stamp(live) {
  statusLine.textContent = (live ? 'live: updates every few seconds · ' : '') + 'as of ' +
                           new Date().toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}
function chartReady() { return typeof Dygraph !== 'undefined'; }

// --- pages ---------------------------------------------------------------------------------
async function pageIndex() {
  const [ws, es] = await Promise.all([api('/api/workloads?limit=0'),
                                      api('/api/experiments?limit=20')]);
  setPage('workloads',
    el('h1', {}, 'Workloads'),
    table(['workload', 'description', 'config', 'spec revision'],
          ws.items.map(w => el('tr', {}, el('td', {}, link('/workloads/' + encodeURIComponent(w.name), w.name)),
                                el('td', {}, w.description || ''), el('td', {}, 'v' + w.config_version),
                                el('td', {}, w.spec_revision))), {id: 'workloads'}),
    el('h2', {}, 'Recent experiments'),
    experimentsTable(es.items));
  stamp(false);
}

function experimentsTable(items) {
  return table(['id', 'workload', 'change', 'state', 'decision', 'primary effect', 'runs'],
    items.map(e => {
      const p = (e.metrics || []).find(m => m.metric === e.primary);
      return el('tr', {}, el('td', {}, link('/experiments/' + e.id, String(e.id))),
                el('td', {}, e.workload), el('td', {}, e.change ? e.change.description : ''),
                el('td', {}, badge(e.state)), el('td', {}, badge(e.decision)),
                el('td', {}, p ? effect(p.ratio) : '–'),
                el('td', {}, e.runs.done + '/' + e.runs.total));
    }), {id: 'experiments'});
}

// The level of each point: the segment's level between change points (as regress show -o csv).
function levels(r) {
  const starts = new Map(r.change_points.map(c => [c.first_run_id, c]));
  let level = r.change_points.length ? r.change_points[0].before
            : r.series.reduce((a, p) => a + p.value, 0) / Math.max(1, r.series.length);
  return r.series.map(p => {
    if (starts.has(p.run_id)) level = starts.get(p.run_id).after;
    return level;
  });
}

async function pageWorkload(name) {
  const enc = encodeURIComponent(name);
  const [d, cfg, reg] = await Promise.all([api('/api/workloads/' + enc),
                                           api('/api/workloads/' + enc + '/config'),
                                           api('/api/workloads/' + enc + '/regression?limit=0')]);
  const lineage = el('div', {class: 'lineage', id: 'lineage'});
  cfg.lineage.forEach((v, i) => {
    if (i > 0) lineage.appendChild(el('span', {class: 'muted'}, '→'));
    lineage.appendChild(el('span', {class: 'v' + (v.current ? ' current' : ''), 'data-version': v.version},
      'v' + v.version, ' ',
      v.change ? el('span', {}, v.change.description, ' ',
                    v.experiment_id ? link('/experiments/' + v.experiment_id, '(exp ' + v.experiment_id + ')') : '')
               : el('span', {class: 'muted'}, 'defaults')));
  });
  const metrics = table(['metric', 'role', 'better', 'unit', 'min effect'],
    (d.metrics || []).map(m => el('tr', {}, el('td', {}, m.name), el('td', {}, m.role),
                                  el('td', {}, m.better), el('td', {}, m.unit || ''),
                                  num(m.min_effect, 'min_effect:' + m.name))));
  const lv = levels(reg);
  const starts = new Map(reg.change_points.map(c => [c.first_run_id, c]));
  const recorded = new Map(reg.regressions.map(g => [g.first_bad_run, g]));
  const chart = el('div', {class: 'chart', id: 'regression-chart'});
  const seriesRows = reg.series.map((p, i) => {
    const c = starts.get(p.run_id);
    const g = recorded.get(p.run_id);
    const cls = c ? (c.regression ? 'change-regression' : 'change-improvement') : null;
    return el('tr', {class: cls, 'data-run': p.run_id},
      el('td', {}, String(i + 1)), el('td', {}, link('/runs/' + p.run_id, String(p.run_id))),
      el('td', {}, p.at), num(p.value, 'series:' + p.run_id), num(lv[i], 'level:' + p.run_id),
      el('td', {}, c ? (c.regression ? 'regression starts here' : 'improvement starts here') : '',
         g ? el('span', {class: 'badge regression'}, ' recorded regression ' + g.id) : ''));
  });
  const alerts = reg.alerts.length
    ? el('ul', {id: 'alerts'}, reg.alerts.map(a => el('li', {class: 'error'}, a)))
    : el('p', {class: 'muted', id: 'alerts'}, 'no alerts');
  setPage(name,
    el('h1', {}, 'Workload ', el('span', {id: 'workload-name'}, name)),
    el('p', {class: 'muted'}, d.description || ''),
    kv([['config', 'v' + d.config_version], ['spec revision', String(d.spec_revision)],
        ['current params', params(cfg.params)],
        ['history', d.history ? Object.entries(d.history).map(([k, v]) => v + ' ' + k).join(', ') : null]]),
    el('h2', {}, 'Config lineage'), lineage,
    el('h2', {}, 'Goal'), el('div', {id: 'goal'}, el('span', {class: 'muted'}, 'loading…')),
    el('h2', {}, 'Regression series of v' + reg.config_version + ': ' + reg.metric + (reg.unit ? ' (' + reg.unit + ', ' + reg.better + ' is better)' : '')),
    alerts, chart,
    el('p', {class: 'legend-note'}, 'Each dot is a run of the current config; the line is the level of its segment between change points; ' +
       'a red mark is a change point that is a regression (R), green an improvement (I); the dashed line is the newest run\'s bound.'),
    kv([['newest run', reg.latest.regression ? el('span', {class: 'error'}, 'outside its bound') : 'within its bound'],
        ['level', reg.latest.level === null ? null : el('span', {'data-field': 'latest.level', 'data-value': reg.latest.level}, fmt(reg.latest.level))],
        ['bound', reg.latest.bound === null ? null : el('span', {'data-field': 'latest.bound', 'data-value': reg.latest.bound}, fmt(reg.latest.bound))],
        ['checked against', String(reg.latest.checked_against) + ' runs']]),
    el('h3', {}, 'Change points'),
    reg.change_points.length
      ? table(['first run', 'before', 'after', 'p', 'kind'], reg.change_points.map(c =>
          el('tr', {class: c.regression ? 'change-regression' : 'change-improvement', 'data-first-run': c.first_run_id},
             el('td', {}, link('/runs/' + c.first_run_id, String(c.first_run_id))),
             num(c.before, 'cp.before:' + c.first_run_id), num(c.after, 'cp.after:' + c.first_run_id),
             num(c.p, 'cp.p:' + c.first_run_id), el('td', {}, c.regression ? 'regression' : 'improvement'))),
          {id: 'change-points'})
      : el('p', {class: 'muted', id: 'change-points'}, 'none'),
    el('h3', {}, 'Recorded regressions'),
    reg.regressions.length
      ? table(['id', 'type', 'first bad run', 'before', 'after', 'state', 'message'], reg.regressions.map(g =>
          el('tr', {'data-first-bad-run': g.first_bad_run}, el('td', {}, String(g.id)), el('td', {}, g.type),
             el('td', {}, link('/runs/' + g.first_bad_run, String(g.first_bad_run))),
             num(g.before, 'rec.before:' + g.id), num(g.after, 'rec.after:' + g.id),
             el('td', {}, badge(g.state)), el('td', {}, g.message))), {id: 'recorded'})
      : el('p', {class: 'muted', id: 'recorded'}, 'none'),
    el('h3', {}, 'Stability runs'),
    reg.stability_runs.length
      ? table(['run', 'duration', 'state', 'verdict', 'message'], reg.stability_runs.map(s =>
          el('tr', {}, el('td', {}, link('/runs/' + s.run_id, String(s.run_id))), el('td', {}, s.duration_s + ' s'),
             el('td', {}, badge(s.state)), el('td', {}, badge(s.verdict)), el('td', {}, s.message || ''))), {id: 'stability'})
      : el('p', {class: 'muted', id: 'stability'}, 'none'),
    el('h3', {}, 'The series, run by run'),
    table(['#', 'run', 'finished', reg.metric, 'level', 'change'], seriesRows, {id: 'series'}),
    el('h2', {}, 'Metrics'), metrics);
  // The goal (404: none set; the page says so).
  fetch('/api/workloads/' + enc + '/goal', {credentials: 'same-origin'}).then(async r => {
    const box = document.getElementById('goal');
    if (r.status === 404) {
      box.replaceChildren(el('span', {class: 'muted'}, 'no goal set (tunectl goal set ' + name + ' --metric M --target X)'));
      return;
    }
    const g = await r.json();
    if (!r.ok) { box.replaceChildren(el('span', {class: 'error'}, g.message)); return; }
    box.replaceChildren(kv([
      ['target', el('span', {'data-field': 'goal.target', 'data-value': g.target}, g.metric + ' ' + (g.better === 'lower' ? '≤ ' : '≥ ') + fmt(g.target))],
      ['where it stands', el('span', {id: 'goal-summary'}, g.summary || '–')],
      ['guardrails', (g.guardrails || []).join(', ') || null]]));
  }).catch(() => {});
  drawRegression(chart, reg, lv);
  stamp(false);
}

function drawRegression(div, reg, lv) {
  if (!chartReady() || !reg.series.length) {
    div.replaceChildren(el('p', {class: 'muted'}, reg.series.length ? 'chart library not loaded' : 'no runs yet'));
    return;
  }
  const data = reg.series.map((p, i) => [i + 1, p.value, lv[i]]);
  const idx = new Map(reg.series.map((p, i) => [p.run_id, i + 1]));
  const marks = [];
  const cps = reg.change_points.map(c => ({x: idx.get(c.first_run_id), bad: c.regression}))
                               .filter(c => c.x !== undefined);
  for (const c of reg.change_points) {
    const x = idx.get(c.first_run_id);
    if (x === undefined) continue;
    marks.push({series: reg.metric, x, shortText: c.regression ? 'R' : 'I',
                text: (c.regression ? 'regression' : 'improvement') + ' from run ' + c.first_run_id +
                      ': ' + fmt(c.before) + ' → ' + fmt(c.after),
                cssClass: c.regression ? 'regression-mark' : 'improvement-mark'});
  }
  for (const g of reg.regressions) {
    const x = idx.get(g.first_bad_run);
    if (x === undefined || marks.some(m => m.x === x)) {
      const m = marks.find(m => m.x === x);
      if (m) { m.text += ' · recorded regression ' + g.id; m.cssClass = 'recorded-mark'; }
      continue;
    }
    marks.push({series: reg.metric, x, shortText: '!', text: 'recorded regression ' + g.id + ' from run ' + g.first_bad_run,
                cssClass: 'recorded-mark'});
  }
  const bound = reg.latest.bound;
  const ys = reg.series.map(p => p.value).concat(lv, bound === null || bound === undefined ? [] : [bound]);
  const lo = Math.min(...ys), hi = Math.max(...ys), pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.05 || 1;
  const g = new Dygraph(div, data, {
    dateWindow: [0.5, reg.series.length + 0.5],
    valueRange: [lo - pad, hi + pad],
    labels: ['run #', reg.metric, 'level'],
    colors: ['#2b6cb0', '#4a5568'],
    drawPoints: true, pointSize: 3, strokeWidth: 0,
    series: {level: {strokeWidth: 1.5, drawPoints: false, stepPlot: true}},
    xlabel: 'run (in the series\' order)', ylabel: reg.metric,
    axes: {x: {valueFormatter: x => 'run ' + (reg.series[x - 1] ? reg.series[x - 1].run_id : x)},
           y: {axisLabelWidth: 64, axisLabelFormatter: fmt}},
    legend: 'always',
    underlayCallback: (ctx, area, gr) => {
      for (const c of cps) {
        const px = gr.toDomXCoord(c.x - 0.5);
        ctx.fillStyle = c.bad ? 'rgba(197,48,48,0.7)' : 'rgba(47,133,90,0.7)';
        ctx.fillRect(px - 1, area.y, 2, area.h);
      }
      if (bound !== null && bound !== undefined) {
        const py = gr.toDomYCoord(bound);
        ctx.strokeStyle = 'rgba(197,48,48,0.6)';
        ctx.setLineDash([5, 4]);
        ctx.beginPath(); ctx.moveTo(area.x, py); ctx.lineTo(area.x + area.w, py); ctx.stroke();
        ctx.setLineDash([]);
      }
    },
  });
  g.ready(() => g.setAnnotations(marks));
}

async function pageExperiment(id) {
  const e = await api('/api/experiments/' + id);
  const [runs, hyp, wl] = await Promise.all([
    api('/api/experiments/' + id + '/runs'),
    e.hypothesis_id ? api('/api/hypotheses/' + e.hypothesis_id) : Promise.resolve(null),
    api('/api/workloads/' + encodeURIComponent(e.workload))]);
  const minEffect = new Map((wl.metrics || []).map(m => [m.name, m.min_effect]));
  const tolerance = new Map((wl.metrics || []).map(m => [m.name, m.tolerance]));
  const live = e.state === 'running';
  const change = e.change || {};
  const kids = [
    el('h1', {}, 'Experiment ', el('span', {id: 'experiment-id'}, String(e.id)), ' · ',
       link('/workloads/' + encodeURIComponent(e.workload), e.workload), ' ', badge(e.state), ' ',
       el('span', {id: 'decision'}, badge(e.decision))),
    el('h2', {}, 'Hypothesis'),
    hyp ? kv([['statement', hyp.statement || null], ['evidence', hyp.evidence || null],
              ['expected', el('span', {id: 'expected'}, hyp.expect || e.hypothesis_expect || '–')],
              ['result', badge(e.hypothesis_result)], ['note', e.hypothesis_note]])
        : el('p', {class: 'muted'}, 'no hypothesis recorded (a batch member or a direct experiment)'),
    el('h2', {}, 'The one change'),
    kv([['change', el('span', {id: 'change'}, change.description || '–')],
        ['from', params(change.from)], ['to', params(change.to)],
        ['baseline', String(e.baseline_id)], ['config', 'v' + e.config_version],
        ['runs', el('span', {id: 'runs-count'}, e.runs.done + ' done of ' + e.runs.total +
                    (e.runs.failed ? ', ' + e.runs.failed + ' failed' : '') +
                    (e.runs.active ? ', ' + e.runs.active + ' running' : ''))],
        ['pairs', e.pairs + ' usable of at most ' + e.max_pairs]]),
  ];
  if (e.interim) {
    kids.push(el('h2', {}, 'So far (not a decision)'),
      table(['metric', 'control', 'variant', 'effect', 'CI'], e.interim.metrics.map(m =>
        el('tr', {}, el('td', {}, m.metric), num(m.control_median, 'interim.control:' + m.metric),
           num(m.variant_median, 'interim.variant:' + m.metric), el('td', {}, effect(m.ratio)),
           el('td', {}, m.ci_low === null ? '–' : effect(m.ci_low) + ' … ' + effect(m.ci_high))))));
  }
  kids.push(el('h2', {}, 'Per metric'));
  for (const m of e.metrics) kids.push(metricSection(e, m, runs.items, minEffect.get(m.metric), tolerance.get(m.metric)));
  kids.push(el('h2', {}, 'Decision'),
    kv([['decision', badge(e.decision)], ['primary metric', e.primary],
        ['stopped', el('span', {id: 'stopped'}, e.stopped || '–')], ['decided at', e.decided_at],
        ['frozen', e.frozen_version ? 'as config v' + e.frozen_version + ' by ' + e.frozen_by + ' at ' + e.frozen_at : null],
        ['drift', e.drift]]),
    e.reasons.length ? el('ul', {id: 'reasons'}, e.reasons.map(r => el('li', {}, r))) : '',
    e.advice.length ? el('div', {}, el('h3', {}, 'Advice'), el('ul', {}, e.advice.map(a => el('li', {}, a)))) : '');
  setPage('experiment ' + e.id, ...kids);
  for (const m of e.metrics) drawArms(e, m, runs.items);
  stamp(live);
  if (live) poll(() => pageExperiment(id), 3000);
}

// The runs of metric `m` as its comparison used them (the verdict's control_runs/variant_runs:
// run, pair, value, compared, why), each with its arm; then the experiment's runs that have no
// value for it (failed, cancelled, no steady state), which the verdict does not list.
function armRuns(m, runs) {
  const out = [];
  const listed = new Set();
  for (const [arm, key] of [['control', 'control_runs'], ['variant', 'variant_runs']]) {
    for (const r of m[key] || []) {
      listed.add(r.run);
      out.push({arm, run: r.run, pair: r.pair, value: r.value, compared: r.compared, why: r.why || null});
    }
  }
  for (const r of runs) {
    if (!r.arm || listed.has(r.id) || r.state === 'queued' || r.state === 'assigned' || r.state === 'running') continue;
    const rm = (r.metrics || []).find(x => x.metric === m.metric);
    out.push({arm: r.arm, run: r.id, pair: Math.floor(r.index / 2), value: null, compared: false,
              why: r.state !== 'succeeded' ? r.state + (r.reason ? ': ' + r.reason : '')
                 : (rm && rm.warnings ? rm.warnings : 'no steady-state value')});
  }
  return out;
}

function metricSection(e, m, runs, minEffect, tolerance) {
  const sec = el('section', {class: 'metric', 'data-metric': m.metric});
  sec.appendChild(el('h3', {}, m.metric, ' ', el('span', {class: 'muted'}, m.role + ', ' + m.better + ' is better' + (m.unit ? ', ' + m.unit : ''))));
  sec.appendChild(table(['n (control/variant)', 'control median', 'variant median', 'effect', '95% CI', 'p', 'decision', 'guardrail'], [
    el('tr', {}, el('td', {}, m.n_control + '/' + m.n_variant),
       num(m.control_median, 'control_median'), num(m.variant_median, 'variant_median'),
       el('td', {'data-field': 'ratio', 'data-value': m.ratio === null ? '' : m.ratio}, effect(m.ratio)),
       el('td', {'data-field': 'ci', 'data-low': m.ci_low === null ? '' : m.ci_low, 'data-high': m.ci_high === null ? '' : m.ci_high},
          m.ci_low === null ? '–' : effect(m.ci_low) + ' … ' + effect(m.ci_high)),
       num(m.p_value, 'p_value'), el('td', {}, badge(m.decision)), el('td', {'data-field': 'guardrail'}, badge(m.guardrail)))]));
  if (m.ratio !== null) sec.appendChild(ciBar(m, m.role === 'guardrail' ? tolerance : minEffect));
  if (m.note) sec.appendChild(el('p', {class: 'muted'}, m.note));
  sec.appendChild(el('div', {class: 'chart small', id: 'arms-' + m.metric}));
  const excluded = armRuns(m, runs).filter(r => !r.compared);
  sec.appendChild(excluded.length
    ? el('div', {}, el('p', {class: 'muted'}, 'Left out (grey dots where the run has a value):'),
         el('ul', {class: 'excluded'}, excluded.map(r => el('li', {'data-run': r.run},
           link('/runs/' + r.run, 'run ' + r.run), ' (' + r.arm + (r.pair >= 0 ? ', pair ' + (r.pair + 1) : '') + '): ' + (r.why || 'not compared')))))
    : el('p', {class: 'muted'}, 'No run left out.'));
  return sec;
}

// The effect's CI against ±min_effect (the band where a change is too small to matter).
function ciBar(m, band) {
  const lo = (m.ci_low - 1) * 100, hi = (m.ci_high - 1) * 100, pt = (m.ratio - 1) * 100;
  const b = band ? band * 100 : 0;
  const span = Math.max(Math.abs(lo), Math.abs(hi), b, 1) * 1.25;
  const pos = v => ((v + span) / (2 * span) * 100).toFixed(2) + '%';
  const bar = el('div', {class: 'cibar', title: 'effect ' + effect(m.ratio) + ', 95% CI ' + effect(m.ci_low) + ' … ' + effect(m.ci_high) +
                          (b ? ', ±' + b.toFixed(1) + '% = too small to matter' : '')});
  if (b) bar.appendChild(el('div', {class: 'band', style: null}));
  const band_ = bar.firstChild;
  if (b) { band_.style.left = pos(-b); band_.style.width = ((2 * b) / (2 * span) * 100).toFixed(2) + '%'; }
  const zero = el('div', {class: 'zero'}); zero.style.left = pos(0); bar.appendChild(zero);
  const ci = el('div', {class: 'ci'}); ci.style.left = pos(lo); ci.style.width = ((hi - lo) / (2 * span) * 100).toFixed(2) + '%';
  bar.appendChild(ci);
  const p = el('div', {class: 'point'}); p.style.left = pos(pt); bar.appendChild(p);
  // Labels outside the band's edges (0 only when the band is wide enough to leave it room).
  const wide = b / span > 0.2;
  for (const [v, t, shift] of [[-b, '−' + b.toFixed(1) + '%', '-100%'], [0, '0', '-50%'], [b, '+' + b.toFixed(1) + '%', '0']]) {
    if (v !== 0 && (!b || b / span < 0.08)) continue;
    if (v === 0 && b && !wide) continue;
    const l = el('span', {class: 'lbl'}, t); l.style.left = pos(v); l.style.transform = 'translateX(' + shift + ')';
    bar.appendChild(l);
  }
  return el('div', {class: 'cibar-wrap'}, bar,
            el('span', {class: 'legend-note'}, 'bar: the 95% CI of the effect; grey band: ±' + (b ? b.toFixed(1) + '% (min effect)' : 'none')));
}

function drawArms(e, m, runs) {
  const div = document.getElementById('arms-' + m.metric);
  if (!div) return;
  const rows = [];
  armRuns(m, runs).forEach((r, i) => {
    if (r.value === null) return;
    const pair = r.pair >= 0 ? r.pair + 1 : i + 1;
    const x = pair + (r.arm === 'control' ? -0.12 : 0.12);
    rows.push([x, r.compared && r.arm === 'control' ? r.value : null,
               r.compared && r.arm === 'variant' ? r.value : null, r.compared ? null : r.value]);
  });
  if (!chartReady() || !rows.length) {
    div.replaceChildren(el('p', {class: 'muted'}, rows.length ? 'chart library not loaded' : 'no run values yet'));
    return;
  }
  rows.sort((a, b) => a[0] - b[0]);
  new Dygraph(div, rows, {
    labels: ['pair', 'control', 'variant', 'left out'],
    colors: ['#2b6cb0', '#d97706', '#a0aec0'],
    drawPoints: true, pointSize: 4, strokeWidth: 0, legend: 'always',
    xlabel: 'ABBA pair (in run order)', ylabel: m.metric + (m.unit ? ' (' + m.unit + ')' : ''),
    axes: {x: {valueFormatter: x => 'pair ' + Math.round(x), axisLabelFormatter: x => Number.isInteger(x) ? String(x) : ''},
           y: {axisLabelWidth: 64, axisLabelFormatter: y => String(Number(y.toPrecision(6)))}},
    dateWindow: [0.5, Math.max(...rows.map(r => r[0])) + 0.5],
  });
}

async function pageRun(id) {
  const [r, samples] = await Promise.all([
    api('/api/runs/' + id),
    api('/api/runs/' + id + '/samples').catch(e => ({error: e.message}))]);
  const live = r.state === 'running' || r.state === 'assigned' || r.state === 'queued';
  const owner = r.experiment_id ? link('/experiments/' + r.experiment_id, 'experiment ' + r.experiment_id + ' (' + r.arm + ')')
              : r.baseline_id ? 'baseline ' + r.baseline_id + (r.purpose ? ' (' + r.purpose + ')' : '') : '–';
  const warnings = [];
  for (const m of r.metrics) if (m.warnings) warnings.push(m.metric + ': ' + m.warnings);
  setPage('run ' + r.id,
    el('h1', {}, 'Run ', el('span', {id: 'run-id'}, String(r.id)), ' · ',
       link('/workloads/' + encodeURIComponent(r.workload), r.workload), ' ',
       el('span', {id: 'run-state'}, badge(r.state))),
    kv([['for', owner], ['index', String(r.index)], ['attempt', String(r.attempt)],
        ['agent', r.agent ? r.agent + (r.node && r.node !== r.agent ? ' on ' + r.node : '') + (r.slot !== null ? ', slot ' + r.slot : '') : null],
        ['params', params(r.params)], ['exit', r.exit_code !== null ? String(r.exit_code) : r.signal !== null ? 'signal ' + r.signal : null],
        ['reason', r.reason], ['waiting', r.wait_reason],
        ['samples', el('span', {'data-field': 'samples', 'data-value': r.samples}, String(r.samples))],
        ['created', r.created_at], ['started', r.started_at], ['finished', r.finished_at]]),
    el('h2', {}, 'Metrics' + (r.live ? ' (so far)' : '')),
    table(['metric', 'samples', 'warm-up (detected)', 'steady window', 'median', 'min', 'max', 'usable', 'source'],
      r.metrics.map(m => el('tr', {'data-metric': m.metric, class: m.usable ? null : 'excluded'},
        el('td', {}, m.metric), num(m.samples, 'samples:' + m.metric), num(m.detected_warmup, 'warmup:' + m.metric),
        num(m.steady, 'steady:' + m.metric), num(m.median, 'median:' + m.metric), num(m.min, 'min:' + m.metric),
        num(m.max, 'max:' + m.metric), el('td', {}, m.usable ? 'yes' : 'no'), el('td', {}, m.source || 'log'))), {id: 'run-metrics'}),
    el('p', {class: 'legend-note'}, 'The steady window is the samples after the warm-up (declared or detected) that the median is taken over; ' +
       'profiler shares appear as metrics from a profile: source.'),
    el('h2', {}, 'Series over steps' + (samples.live ? ' (so far)' : '')),
    samples.error ? el('p', {class: 'error', id: 'series-error'}, samples.error)
                  : el('div', {id: 'series'}, samples.metrics.map(seriesFigure)),
    profilerShares(r),
    el('h2', {}, 'Health warnings'),
    warnings.length ? el('ul', {id: 'warnings'}, warnings.map(w => el('li', {}, w))) : el('p', {class: 'muted', id: 'warnings'}, 'none'),
    el('h2', {}, 'stderr (tail)'),
    r.stderr_tail ? el('pre', {class: 'stderr', id: 'stderr'}, r.stderr_tail) : el('p', {class: 'muted', id: 'stderr'}, 'empty'));
  if (!samples.error) for (const m of samples.metrics) drawSeries(m);
  stamp(live);
  if (live) poll(() => pageRun(id), 2000);
}

// One metric of `run samples` (the CLI's -o json): the figure carries the document's numbers in
// data attributes (for tests and copying); the chart is drawn into it by drawSeries.
function seriesFigure(m) {
  const nan = m.skipped.filter(k => k.reason === 'nonfinite').length;
  const note = [
    m.warmup_end !== null ? 'warm-up to step ' + m.warmup_end + ' (grey)' : 'no warm-up',
    m.steady_from !== null ? 'steady window steps ' + m.steady_from + '–' + m.steady_to +
      ' (blue), median ' + fmt(m.median) + ' (line)' : 'no steady window',
    m.skipped_total ? m.skipped_total + ' left out (red' + (nan ? '; NaN/Inf drawn at the median' : '') + ')' : null,
    m.outliers_total ? m.outliers_total + ' outlier(s) beyond 5 MADs, counted (orange)' : null,
    m.decimated ? m.points.length + ' of ' + m.points_total + ' points shown (the lowest and highest of each bucket)' : null,
  ].filter(x => x).join(' · ');
  return el('figure', {class: 'series', 'data-metric': m.metric, 'data-points': m.points.length,
                       'data-points-total': m.points_total, 'data-decimated': m.decimated ? 'true' : 'false',
                       'data-warmup-end': m.warmup_end, 'data-steady-from': m.steady_from,
                       'data-steady-to': m.steady_to, 'data-median': m.median,
                       'data-skipped': m.skipped_total, 'data-outliers': m.outliers_total},
    el('h3', {}, m.metric),
    el('div', {class: 'series-legend', id: 'series-legend-' + m.metric}),
    el('div', {class: 'chart small', id: 'series-chart-' + m.metric}),
    el('figcaption', {class: 'legend-note'}, note));
}

function drawSeries(m) {
  const div = document.getElementById('series-chart-' + m.metric);
  if (!div) return;
  if (!chartReady() || (!m.points.length && !m.skipped.length)) {
    div.replaceChildren(el('p', {class: 'muted'}, m.points.length ? 'chart library not loaded' : 'no samples yet'));
    return;
  }
  // One row per step: the value, a left-out sample, an outlier (dygraph wants rows in x order).
  const rows = new Map();
  const row = step => {
    if (!rows.has(step)) rows.set(step, [step, null, null, null]);
    return rows.get(step);
  };
  for (const p of m.points) row(p.step)[1] = p.value;
  const values = m.points.map(p => p.value);
  const nanAt = m.median !== null ? m.median : values.length ? Math.min(...values) : 0;
  for (const k of m.skipped) row(k.step)[2] = k.value === null ? nanAt : k.value;
  for (const o of m.outliers) row(o.step)[3] = o.value;
  const data = [...rows.values()].sort((a, b) => a[0] - b[0]);
  const clamp = (area, x) => Math.max(area.x, Math.min(area.x + area.w, x));
  const first = data[0][0], last = data[data.length - 1][0], pad = Math.max(0.5, (last - first) * 0.01);
  const g = new Dygraph(div, data, {
    dateWindow: [first - pad, last + pad],
    labelsDiv: document.getElementById('series-legend-' + m.metric),
    labels: ['step', m.metric, 'left out', 'outlier (counted)'],
    colors: ['#2b6cb0', '#c53030', '#d97706'],
    connectSeparatedPoints: true, strokeWidth: 1, drawPoints: data.length <= 300, pointSize: 2,
    series: {'left out': {strokeWidth: 0, drawPoints: true, pointSize: 4},
             'outlier (counted)': {strokeWidth: 0, drawPoints: true, pointSize: 4}},
    xlabel: 'step', legend: 'always',
    axes: {y: {axisLabelWidth: 64, axisLabelFormatter: fmt}},
    underlayCallback: (ctx, area, gr) => {
      if (m.warmup_end !== null) {
        const b = clamp(area, gr.toDomXCoord(m.warmup_end + 0.5));
        ctx.fillStyle = 'rgba(160,174,192,0.30)';
        ctx.fillRect(area.x, area.y, b - area.x, area.h);
      }
      if (m.steady_from !== null) {
        const a = clamp(area, gr.toDomXCoord(m.steady_from - 0.5)), b = clamp(area, gr.toDomXCoord(m.steady_to + 0.5));
        ctx.fillStyle = 'rgba(43,108,176,0.10)';
        ctx.fillRect(a, area.y, b - a, area.h);
      }
      if (m.median !== null) {
        const py = gr.toDomYCoord(m.median);
        ctx.strokeStyle = 'rgba(29,35,48,0.8)';
        ctx.setLineDash([6, 3]);
        ctx.beginPath(); ctx.moveTo(area.x, py); ctx.lineTo(area.x + area.w, py); ctx.stroke();
        ctx.setLineDash([]);
      }
    },
  });
  div.closest('figure').setAttribute('data-rows', String(g.numRows()));
}

// The profiler's shares of a step (profile_*_pct samples, docs/metric_sources.md) as bars; nothing
// when the run has none.
function profilerShares(r) {
  const shares = r.metrics.filter(m => /^profile_.*_pct$/.test(m.metric) && m.median !== null);
  if (!shares.length) return '';
  return el('div', {id: 'profile'}, el('h2', {}, 'Profiler shares (median per step)'),
    table(['share', '%', ''], shares.map(m => {
      const bar = el('div', {class: 'share'});
      bar.style.width = Math.max(0, Math.min(100, m.median)).toFixed(1) + '%';
      return el('tr', {}, el('td', {}, m.metric.replace(/^profile_|_pct$/g, '')),
                num(m.median, 'share:' + m.metric), el('td', {class: 'sharecell'}, bar));
    })));
}

async function pageLog() {
  const q = new URLSearchParams(location.search);
  const form = el('form', {class: 'filters', method: 'get', action: '/log', id: 'log-filter'});
  for (const [name, label] of [['workload', 'workload'], ['param', 'parameter'], ['decision', 'decision'], ['since', 'since (30d, 2026-01-31)']]) {
    form.appendChild(el('label', {}, label, el('input', {name, value: q.get(name) || ''})));
  }
  form.appendChild(el('button', {type: 'submit'}, 'filter'));
  const args = new URLSearchParams({limit: '200'});
  for (const k of ['workload', 'param', 'since']) if (q.get(k)) args.set(k, q.get(k));
  const l = await api('/api/log?' + args.toString());
  const decision = q.get('decision') || '';
  const items = l.items.filter(x => !decision || x.decision === decision);
  setPage('tuning log', el('h1', {}, 'Tuning log'), form,
    table(['at', 'kind', 'workload', 'experiment', 'change', 'expected', 'hypothesis', 'primary', 'effect', 'decision', 'frozen'],
      items.map(x => {
        const h = x.hypothesis || {};
        const p = x.primary || {};
        const eff = p.effect || (typeof p.ratio === 'number' && p.ratio > 0 ? effect(p.ratio) : '–');
        return el('tr', {'data-kind': x.kind, 'data-experiment': x.experiment || null},
          el('td', {}, x.at), el('td', {}, x.kind),
          el('td', {}, x.workload ? link('/workloads/' + encodeURIComponent(x.workload), x.workload) : '–'),
          el('td', {}, x.experiment ? link('/experiments/' + x.experiment, String(x.experiment)) : '–'),
          el('td', {}, x.change || x.message || ''), el('td', {}, h.expected || '–'), el('td', {}, badge(h.result)),
          el('td', {}, p.metric || x.metric || '–'), el('td', {}, eff),
          el('td', {}, badge(x.decision)), el('td', {}, x.frozen || '–'));
      }), {id: 'log'}),
    l.next_page_token ? el('p', {class: 'muted'}, 'older entries: tunectl log --page-token ' + l.next_page_token) : '');
  stamp(false);
}

// A cell that shows `content` and carries `value` (text, null as '') in data-value.
function fieldCell(field, value, content) {
  return el('td', {'data-field': field, 'data-value': value === null || value === undefined ? '' : value}, content);
}
const corrections = {holm: 'Holm', bh: 'Benjamini-Hochberg'};

async function pageBatches() {
  const b = await api('/api/batches?limit=0');
  const live = b.items.some(x => x.state === 'running');
  setPage('batches', el('h1', {}, 'Batches'),
    table(['id', 'workload', 'baseline', 'schedule', 'state', 'correction', 'members', 'decisions'],
      b.items.map(x => el('tr', {'data-batch': x.id}, el('td', {}, link('/batches/' + x.id, String(x.id))), el('td', {}, x.workload),
        el('td', {}, String(x.baseline_id)), el('td', {}, x.schedule || '–'),
        fieldCell('state:' + x.id, x.state, badge(x.state)),
        el('td', {}, corrections[x.correction] || x.correction || '–'), num(x.members.total, 'members:' + x.id),
        el('td', {}, Object.entries(x.members.by_decision).map(([k, v]) => k + ' ' + v).join(', ') || '–'))), {id: 'batches'}));
  stamp(live);
  if (live) poll(pageBatches, 5000);
}

// A batch's members as `batch show` has them: p is the member's own (its primary metric's), the
// adjusted p and the decision after the batch's correction are null until every member is
// measured; "alone" is the member's decision before the correction.
async function pageBatch(id) {
  const b = await api('/api/batches/' + id);
  const live = b.state === 'running';
  const method = corrections[b.correction] || b.correction;
  setPage('batch ' + id,
    el('h1', {}, 'Batch ', el('span', {id: 'batch-id'}, String(b.id)), ' · ',
       link('/workloads/' + encodeURIComponent(b.workload), b.workload), ' ',
       el('span', {id: 'batch-state', 'data-value': b.state}, badge(b.state))),
    kv([['baseline', String(b.baseline_id)], ['schedule', b.schedule || 'none (runs any time)'],
        ['correction', el('span', {id: 'correction', 'data-value': b.correction}, method)],
        ['waiting', b.waiting], ['created', b.created_at]]),
    table(['experiment', 'change', 'state', 'runs', 'primary effect', 'p', 'adjusted p', 'decision alone', 'decision'],
      b.experiments.map(e => {
        const p = (e.metrics || []).find(m => m.metric === e.primary);
        const alone = e.correction ? e.correction.unadjusted_decision : null;
        return el('tr', {'data-experiment': e.id},
          el('td', {}, link('/experiments/' + e.id, String(e.id))), el('td', {}, e.change ? e.change.description : ''),
          fieldCell('state:' + e.id, e.state, badge(e.state)),
          el('td', {'data-field': 'runs:' + e.id, 'data-value': e.runs.done, 'data-total': e.runs.total}, e.runs.done + '/' + e.runs.total),
          fieldCell('ratio:' + e.id, p ? p.ratio : null, p ? effect(p.ratio) : '–'),
          num(p ? p.p_value : null, 'p:' + e.id), num(e.adjusted_p, 'adjusted_p:' + e.id),
          fieldCell('unadjusted_decision:' + e.id, alone, badge(alone)),
          el('td', {'data-field': 'decision:' + e.id, 'data-value': e.decision || '', 'data-adjusted': e.adjusted_decision || ''},
             badge(e.decision)));
      }), {id: 'batch-members'}),
    el('p', {class: 'legend-note'}, 'p: each member\'s own, on its primary metric. adjusted p: ' + method +
       ' across the batch\'s primary comparisons, once every member is measured (guardrails are not corrected; ' +
       'CIs are unadjusted); a member significant alone but not after the correction is inconclusive.'));
  stamp(live);
  if (live) poll(() => pageBatch(id), 3000);
}

async function pageSchedules() {
  const s = await api('/api/schedules');
  setPage('schedules', el('h1', {}, 'Schedules'),
    table(['name', 'window', 'time zone', 'max agents', 'at window end', 'status (next window)'],
      s.items.map(x => el('tr', {}, el('td', {}, x.name), el('td', {}, x.window || (x.cron + ' for ' + x.duration_s + ' s')),
        el('td', {}, x.tz), el('td', {}, x.max_agents === null ? 'any' : String(x.max_agents)), el('td', {}, x.on_window_end),
        el('td', {}, x.status))), {id: 'schedules'}));
  stamp(false);
}

async function pageAgents() {
  const a = await api('/api/agents');
  setPage('agents', el('h1', {}, 'Agents'),
    table(['name', 'connected', 'slots', 'running', 'labels', 'executor', 'unhealthy', 'last seen', 'version'],
      a.items.map(x => el('tr', {}, el('td', {}, x.name), el('td', {}, badge(x.connected ? 'connected' : 'disconnected')),
        num(x.slots, 'slots:' + x.name), num(x.running, 'running:' + x.name),
        el('td', {}, x.labels ? Object.entries(x.labels).map(([k, v]) => k + '=' + v).join(' ') : ''),
        el('td', {}, x.executor || ''), el('td', {}, x.unhealthy || '–'), el('td', {}, x.last_seen || '–'), el('td', {}, x.version || ''))), {id: 'agents'}));
  stamp(true);
  poll(pageAgents, 5000);
}

async function route() {
  const p = location.pathname;
  let m;
  api('/api/whoami').then(w => {
    document.getElementById('whoami').textContent = w.name + ' (' + w.role + ')';
  }).catch(() => {});
  if (p === '/') return pageIndex();
  if ((m = p.match(/^\/workloads\/([^/]+)$/))) return pageWorkload(decodeURIComponent(m[1]));
  if ((m = p.match(/^\/experiments\/(\d+)$/))) return pageExperiment(m[1]);
  if ((m = p.match(/^\/runs\/(\d+)$/))) return pageRun(m[1]);
  if ((m = p.match(/^\/batches\/(\d+)$/))) return pageBatch(m[1]);
  if (p === '/log') return pageLog();
  if (p === '/batches') return pageBatches();
  if (p === '/schedules') return pageSchedules();
  if (p === '/agents') return pageAgents();
  throw new Error('no page at ' + p);
}

route().then(() => document.body.setAttribute('data-loaded', 'true'))
       .catch(e => { showError(e); document.body.setAttribute('data-loaded', 'error'); });
