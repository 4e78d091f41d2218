"""End to end in a real browser (headless Chromium through chromedriver, Debian's python3-selenium):
after a real baseline, an experiment, its freeze and a series that slows down part-way, every page
of the web view loads without a console error and shows the numbers `-o json` shows (read from the
DOM), the regression page marks the first slow run, a batch's page is live while it runs and
then shows each member's p and adjusted p, the API answers exactly the CLI's `-o json`, and a page
or API call without a token is refused. Screenshots of each page are saved as test
artifacts in $TUNECTL_ARTIFACTS_DIR (default <build>/artifacts/web).

Run with Debian's python3 (/usr/bin/python3), which has selenium; CI's python3 on PATH may not."""
import json
import math
import os
import re
import ssl
import time
import unittest
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from cluster import BIN, SRC, Cluster

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")
ARTIFACTS = os.environ.get("TUNECTL_ARTIFACTS_DIR", os.path.join(BIN, "artifacts", "web"))


def close_to(shown, exact, rel=2e-3):
    """Whether the text a page shows (4 significant digits) is `exact` as rounded for display."""
    m = re.search(r"-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?", shown)
    if not m:
        return False
    v = float(m.group(0))
    return math.isclose(v, exact, rel_tol=rel, abs_tol=1e-9)


class WebE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = c = Cluster()
        try:
            cls.slow = os.path.join(c.dir, "slowdown")
            with open(cls.slow, "w") as f:
                f.write("1.0\n")
            os.environ["DEMO_SLOWDOWN_FILE"] = cls.slow
            try:
                c.start_agent("node-1", slots=1)
            finally:
                del os.environ["DEMO_SLOWDOWN_FILE"]
            c.cli("workload", "apply", "-f", DEMO)
            c.cli("goal", "set", "demo", "--metric", "samples_per_s", "--target", "5000")
            c.cli("schedule", "create", "nightly", "--window", "daily 01:00-05:00", "--tz",
                  "Europe/Berlin")
            cls.viewer = c.json("token", "create", "web-viewer", "--role", "viewer")["secret"]
            c.cli("baseline", "create", "--repeats", "5", "--wait")
            h = c.json("hypothesis", "create", "--param", "num_workers=4",
                       "--expect", "samples_per_s +10%",
                       "--evidence", "data_wait_ms is most of step_time_ms",
                       "--statement", "the data pipeline starves the trainer")
            cls.hypothesis = h
            e = json.loads(c.cli("experiment", "run", "--hypothesis", str(h["id"]), "--wait",
                                 "-o", "json").stdout)
            cls.experiment_id = e["id"]
            # The freeze makes config v2, whose series starts with the variant's runs. On a loaded
            # machine the verdict may not be "improved": freezing it anyway (recorded with its
            # reason) still gives the pages a lineage and a series to show.
            freeze = ["experiment", "freeze", str(e["id"])]
            if e["decision"] != "improved":
                freeze += ["--force", "--reason", "web e2e: the series needs a frozen config"]
            c.cli(*freeze)
            # The series of v2: stable runs, then the node slows down (as test_regress).
            c.cli("baseline", "create", "--repeats", "4", "--wait")
            with open(cls.slow, "w") as f:
                f.write("1.3\n")
            b = c.json("baseline", "create", "--repeats", "12", "--wait")
            with open(cls.slow, "w") as f:
                f.write("1.0\n")
            cls.slow_ids = {r["id"] for r in c.items("run", "list", "--baseline", str(b["id"]))}
            cls.driver = cls.start_browser()
        except Exception:
            c.close()
            raise
        os.makedirs(ARTIFACTS, exist_ok=True)

    @classmethod
    def start_browser(cls):
        o = webdriver.ChromeOptions()
        o.binary_location = "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--window-size=1280,2000", "--no-first-run", "--disable-extensions",
                  "--disable-background-networking", "--disable-component-update"):
            o.add_argument(a)
        # The server's certificate is signed by its data directory's private CA.
        o.accept_insecure_certs = True
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "driver", None):
            cls.driver.quit()
        cls.c.close()

    # --- helpers ------------------------------------------------------------------------------
    @property
    def base(self):
        return f"https://127.0.0.1:{self.c.http_port}"

    def fetch(self, path, token=None, data=None):
        """(status, headers, body) of a request to the web view, TLS checked against the CA."""
        ctx = ssl.create_default_context(cafile=os.path.join(self.c.data_dir, "tls", "ca.pem"))
        req = urllib.request.Request(self.base + path, data=data)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx),
                                             NoRedirect())
        try:
            with opener.open(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def console_errors(self):
        return [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def sign_in(self):
        d = self.driver
        d.get(self.base + "/login?next=/")
        d.find_element(By.ID, "token").send_keys(self.viewer)
        d.find_element(By.ID, "login-submit").click()
        # The click navigates: a body found on the login page may be gone before it is read.
        WebDriverWait(d, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded"))
        self.console_errors()  # drained

    def open(self, path, shot):
        """Loads `path`, waits until its data is drawn, fails on any console error, saves a
        screenshot `shot`.png; returns the driver."""
        d = self.driver
        d.set_window_size(1280, 900)  # the screenshot's height is the page's, measured below
        d.get(self.base + path)
        WebDriverWait(d, 30).until(lambda d: d.find_element(By.TAG_NAME, "body")
                                   .get_attribute("data-loaded"))
        time.sleep(0.5)  # the charts draw after the data
        body = d.find_element(By.TAG_NAME, "body")
        self.assertEqual(body.get_attribute("data-loaded"), "true",
                         d.find_element(By.ID, "main").text[:500])
        errors = self.console_errors()
        self.assertEqual(errors, [], f"console errors on {path}")
        height = d.execute_script("return document.documentElement.scrollHeight")
        d.set_window_size(1280, max(900, min(int(height) + 40, 6000)))
        d.save_screenshot(os.path.join(ARTIFACTS, shot + ".png"))
        return d

    def field(self, scope, name):
        e = scope.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]')
        return e.get_attribute("data-value"), e.text

    def check_series(self, d, run):
        """The run page's series charts against `run samples RUN -o json`: one figure per metric
        whose data attributes are the document's numbers, drawn by the chart library with a row
        per step (a value, a left-out sample or both)."""
        s = self.c.json("run", "samples", str(run))
        self.assertEqual(s["kind"], "RunSamples")
        figures = d.find_elements(By.CSS_SELECTOR, "#series figure.series")
        self.assertEqual([f.get_attribute("data-metric") for f in figures],
                         [m["metric"] for m in s["metrics"]])

        def attr(f, name):
            v = f.get_attribute(name)
            return None if v is None else float(v)
        for f, m in zip(figures, s["metrics"]):
            self.assertEqual(int(f.get_attribute("data-points")), len(m["points"]), m["metric"])
            self.assertEqual(int(f.get_attribute("data-points-total")), m["points_total"])
            self.assertEqual(f.get_attribute("data-decimated"), "true" if m["decimated"] else "false")
            for a, k in (("data-warmup-end", "warmup_end"), ("data-steady-from", "steady_from"),
                         ("data-steady-to", "steady_to"), ("data-median", "median")):
                self.assertEqual(attr(f, a), m[k], (m["metric"], k))
            self.assertEqual(int(f.get_attribute("data-skipped")), m["skipped_total"])
            steps = {p["step"] for p in m["points"]} | {k["step"] for k in m["skipped"]}
            if steps:
                self.assertTrue(f.find_elements(By.CSS_SELECTOR, "canvas"), m["metric"])
                self.assertEqual(int(f.get_attribute("data-rows")), len(steps), m["metric"])
        return s

    def check_batch(self, d, b):
        """The batch page against `batch show -o json` (`b`): its state and correction, and per
        member, in order, the link to its experiment, its state, runs, primary effect, p, adjusted
        p and the decisions before and after the correction."""
        self.assertEqual(d.find_element(By.ID, "batch-state").get_attribute("data-value"), b["state"])
        corr = d.find_element(By.ID, "correction")
        self.assertEqual(corr.get_attribute("data-value"), b["correction"])
        self.assertEqual(corr.text, {"holm": "Holm", "bh": "Benjamini-Hochberg"}[b["correction"]])
        rows = d.find_elements(By.CSS_SELECTOR, "#batch-members tbody tr")
        self.assertEqual([int(r.get_attribute("data-experiment")) for r in rows],
                         [e["id"] for e in b["experiments"]])
        for row, e in zip(rows, b["experiments"]):
            i = e["id"]
            self.assertTrue(row.find_elements(By.CSS_SELECTOR, f'a[href="/experiments/{i}"]'), i)
            self.assertEqual(self.field(row, f"state:{i}")[0], e["state"])
            self.assertEqual(self.field(row, f"runs:{i}")[1], f'{e["runs"]["done"]}/{e["runs"]["total"]}')
            raw, shown = self.field(row, f"decision:{i}")
            self.assertEqual(raw, e["decision"] or "", i)
            self.assertIn(e["decision"] or "–", shown)
            adjusted = row.find_element(By.CSS_SELECTOR, f'[data-field="decision:{i}"]')
            self.assertEqual(adjusted.get_attribute("data-adjusted"), e["adjusted_decision"] or "", i)
            alone = e["correction"]["unadjusted_decision"] if e["correction"] else None
            self.assertEqual(self.field(row, f"unadjusted_decision:{i}")[0], alone or "", i)
            primary = [m for m in e["metrics"] if m["metric"] == e["primary"]]
            ratio = primary[0]["ratio"] if primary else None
            raw, shown = self.field(row, f"ratio:{i}")
            if ratio is None:
                self.assertEqual(raw, "", i)
            else:  # shown as the effect in percent with one decimal: "-51.5%"
                self.assertEqual(float(raw), ratio, i)
                pct = float(re.search(r"[-+][0-9]+\.[0-9]", shown).group(0))
                self.assertLessEqual(abs(pct - (ratio - 1) * 100), 0.051, (shown, ratio))
            p = primary[0]["p_value"] if primary else None
            for name, exact in ((f"p:{i}", p), (f"adjusted_p:{i}", e["adjusted_p"])):
                raw, shown = self.field(row, name)
                if exact is None:
                    self.assertEqual((raw, shown), ("", "–"), name)
                    continue
                self.assertEqual(float(raw), exact, name)
                self.assertTrue(close_to(shown, exact), (name, shown, exact))

    # --- tests --------------------------------------------------------------------------------
    def test_a_page_or_api_call_without_a_token_is_refused(self):
        eid = self.experiment_id
        status, _, body = self.fetch(f"/experiments/{eid}")
        self.assertEqual(status, 401)
        self.assertIn('id="login-form"', body)
        self.assertNotIn("app.js", body)  # no page, only the login form
        status, _, body = self.fetch(f"/api/experiments/{eid}")
        self.assertEqual(status, 401)
        self.assertEqual(json.loads(body)["kind"], "Error")
        status, _, _ = self.fetch(f"/api/experiments/{eid}", token="tct_not-a-real-token")
        self.assertEqual(status, 401)
        status, _, body = self.fetch(f"/experiments/{eid}", token="tct_not-a-real-token")
        self.assertEqual(status, 401)
        self.assertIn("refused the token", body)
        # a wrong token is refused at the login too, and sets no cookie
        status, headers, body = self.fetch("/login", data=b"token=tct_wrong&next=/")
        self.assertEqual(status, 401)
        self.assertNotIn("Set-Cookie", headers)
        # the browser, without a cookie, gets the login form and no data
        self.driver.delete_all_cookies()
        self.driver.get(self.base + f"/experiments/{eid}")
        self.assertTrue(self.driver.find_elements(By.ID, "login-form"))
        self.assertFalse(self.driver.find_elements(By.ID, "experiment-id"))
        self.driver.get_log("browser")  # the 401 is expected here

    def test_live_run_page_updates_without_a_reload(self):
        c = self.c
        s = c.json("regress", "run", "demo", "--duration", "8s")
        run = s["run_id"]
        c.wait_for(lambda: c.json("run", "show", str(run))["state"] == "running", timeout=60,
                   what="the stability run to start")
        self.sign_in()
        d = self.open(f"/runs/{run}", "run-live")
        self.assertIn("running", d.find_element(By.ID, "run-state").text)
        d.execute_script("document.body.dataset.sameDocument = 'yes'")  # a reload drops it
        # The live page redraws its elements: one found may be replaced before it is read.
        WebDriverWait(d, 90, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "succeeded" in d.find_element(By.ID, "run-state").text)
        self.assertEqual(d.execute_script("return document.body.dataset.sameDocument"), "yes")
        self.assertEqual(int(self.field(d, "samples")[0]),
                         c.json("run", "show", str(run))["samples"])
        WebDriverWait(d, 10, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "#series figure").get_attribute("data-rows"))
        self.check_series(d, run)
        self.assertEqual(self.console_errors(), [])
        d = self.open("/workloads/demo", "workload-stability")
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, f'#stability a[href="/runs/{run}"]'))

    def test_the_api_is_the_clis_json(self):
        eid = self.experiment_id
        for path, cli in ((f"/api/experiments/{eid}", ("experiment", "show", str(eid))),
                          ("/api/workloads/demo/regression?limit=0",
                           ("regress", "show", "demo", "--limit", "0")),
                          ("/api/workloads/demo/config", ("config", "show", "--workload", "demo")),
                          (f"/api/experiments/{eid}/runs",
                           ("run", "list", "--experiment", str(eid), "--limit", "0")),
                          ("/api/agents", ("agent", "list")),
                          (f"/api/runs/{min(self.slow_ids)}/samples?max_points=20",
                           ("run", "samples", str(min(self.slow_ids)), "--max-points", "20"))):
            status, headers, body = self.fetch(path, token=self.viewer)
            self.assertEqual(status, 200, body)
            self.assertEqual(headers.get("Content-Type"), "application/json")
            want = self.c.json(*cli)
            got = json.loads(body)
            if path == "/api/agents":  # last_seen moves between the two calls
                for x in want["items"] + got["items"]:
                    x.pop("last_seen", None)
            self.assertEqual(got, want, path)
        status, _, body = self.fetch("/api/tokens", token=self.viewer)
        self.assertEqual(status, 404)  # not part of the web view
        status, _, _ = self.fetch(f"/api/experiments/{eid}", token=self.viewer, data=b"x=1")
        self.assertEqual(status, 405)  # read-only

    def test_pages_show_the_numbers_of_the_json(self):
        self.sign_in()
        eid = self.experiment_id
        e = self.c.json("experiment", "show", str(eid))
        d = self.open(f"/experiments/{eid}", "experiment")
        self.assertEqual(d.find_element(By.ID, "experiment-id").text, str(eid))
        self.assertEqual(d.find_element(By.ID, "change").text, e["change"]["description"])
        self.assertIn(e["decision"], d.find_element(By.ID, "decision").text)
        self.assertEqual(d.find_element(By.ID, "expected").text, self.hypothesis["expect"])
        for m in e["metrics"]:
            sec = d.find_element(By.CSS_SELECTOR, f'section[data-metric="{m["metric"]}"]')
            for k in ("control_median", "variant_median", "p_value"):
                raw, shown = self.field(sec, k)
                if m[k] is None:
                    self.assertEqual(raw, "")
                    continue
                self.assertEqual(float(raw), m[k], (m["metric"], k))
                self.assertTrue(close_to(shown, m[k]), (m["metric"], k, shown, m[k]))
            raw, shown = self.field(sec, "ratio")
            if m["ratio"] is not None:
                self.assertEqual(float(raw), m["ratio"])
                # shown as the effect in percent with one decimal: "+12.3%"
                pct = float(re.search(r"[-+][0-9]+\.[0-9]", shown).group(0))
                self.assertLessEqual(abs(pct - (m["ratio"] - 1) * 100), 0.051, (shown, m["ratio"]))
            ci = sec.find_element(By.CSS_SELECTOR, '[data-field="ci"]')
            if m["ci_low"] is not None:
                self.assertEqual(float(ci.get_attribute("data-low")), m["ci_low"])
                self.assertEqual(float(ci.get_attribute("data-high")), m["ci_high"])
            if m["guardrail"]:
                self.assertIn(m["guardrail"], self.field(sec, "guardrail")[1])
            # the runs as dots: a chart per metric, drawn by the library (a canvas)
            self.assertTrue(sec.find_elements(By.CSS_SELECTOR, f'#arms-{m["metric"]} canvas'))

        w = self.c.json("workload", "show", "demo")
        cfg = self.c.json("config", "show", "--workload", "demo")
        d = self.open("/workloads/demo", "workload")
        versions = [int(v.get_attribute("data-version"))
                    for v in d.find_elements(By.CSS_SELECTOR, "#lineage [data-version]")]
        self.assertEqual(versions, [v["version"] for v in cfg["lineage"]])
        self.assertGreaterEqual(len(versions), 2)  # v1 → v2 by the freeze
        self.assertIn("samples_per_s", d.find_element(By.ID, "goal").text)
        for m in w["metrics"]:
            if m.get("min_effect") is not None:
                raw, _ = self.field(d, "min_effect:" + m["name"])
                self.assertEqual(float(raw), m["min_effect"])

        r = self.c.json("run", "show", str(sorted(self.slow_ids)[0]))
        d = self.open(f"/runs/{r['id']}", "run")
        self.assertEqual(d.find_element(By.ID, "run-id").text, str(r["id"]))
        for m in r["metrics"]:
            raw, shown = self.field(d, "median:" + m["metric"])
            if m["median"] is None:
                self.assertEqual(raw, "")
            else:
                self.assertEqual(float(raw), m["median"])
                self.assertTrue(close_to(shown, m["median"]), (shown, m["median"]))
            self.assertEqual(int(self.field(d, "steady:" + m["metric"])[0]), m["steady"])
        s = self.check_series(d, r["id"])
        # the chart's window and median are the summary's (run show)
        by_metric = {m["metric"]: m for m in s["metrics"]}
        for m in r["metrics"]:
            self.assertEqual(by_metric[m["metric"]]["median"], m["median"], m["metric"])
            self.assertEqual(by_metric[m["metric"]]["steady"], m["steady"], m["metric"])
        primary = by_metric["samples_per_s"]
        self.assertEqual(primary["declared_warmup_steps"], 20)
        self.assertGreaterEqual(primary["warmup_end"], 20)
        self.assertEqual(primary["steady_from"], primary["warmup_end"] + 1)
        if r["stderr_tail"]:
            self.assertIn(r["stderr_tail"].strip()[-40:], d.find_element(By.ID, "stderr").text)

        log = self.c.items("log", "--limit", "200")
        d = self.open("/log", "log")
        rows = d.find_elements(By.CSS_SELECTOR, "#log tbody tr")
        self.assertEqual(len(rows), len(log))
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, f'#log a[href="/experiments/{eid}"]'))
        d = self.open("/log?decision=regressed", "log-regressed")
        self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, "#log tbody tr")),
                         len([x for x in log if x.get("decision") == "regressed"]))

        agents = self.c.items("agent", "list")
        d = self.open("/agents", "agents")
        self.assertEqual(int(self.field(d, "slots:node-1")[0]), agents[0]["slots"])
        schedules = self.c.items("schedule", "list")
        d = self.open("/schedules", "schedules")
        rows = d.find_elements(By.CSS_SELECTOR, "#schedules tbody tr")
        self.assertEqual(len(rows), len(schedules))
        # when the next window opens (a countdown: the minute may turn between the two reads)
        after = self.c.items("schedule", "list")
        self.assertTrue(schedules[0]["status"] in rows[0].text or after[0]["status"] in rows[0].text,
                        (rows[0].text, schedules[0]["status"]))
        self.assertIn("Europe/Berlin", rows[0].text)
        d = self.open("/", "index")
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, '#workloads a[href="/workloads/demo"]'))

    def test_the_regression_page_marks_the_first_slow_run(self):
        self.sign_in()
        r = self.c.json("regress", "show", "demo", "--limit", "0")
        in_series = [p["run_id"] for p in r["series"]]
        first_slow = min(i for i in in_series if i in self.slow_ids)
        # The first regression starts at the first slow run (on a busy machine a later, second step
        # may be found too: the page marks every change point, checked below).
        worse = [cp["first_run_id"] for cp in r["change_points"] if cp["regression"]]
        self.assertTrue(worse, r["change_points"])
        self.assertEqual(worse[0], first_slow,
                         [(p["run_id"], round(p["value"], 1)) for p in r["series"]])
        d = self.open("/workloads/demo", "regression")
        # every point of the series, with its exact value
        rows = d.find_elements(By.CSS_SELECTOR, "#series tbody tr")
        self.assertEqual([int(x.get_attribute("data-run")) for x in rows], in_series)
        for p in r["series"]:
            raw, shown = self.field(d, f"series:{p['run_id']}")
            self.assertEqual(float(raw), p["value"])
            self.assertTrue(close_to(shown, p["value"]), (shown, p["value"]))
        # the first slow run is marked: in the table, in the change points and on the chart
        marked = d.find_elements(By.CSS_SELECTOR, "#series tr.change-regression")
        self.assertEqual([int(x.get_attribute("data-run")) for x in marked], worse)
        self.assertIn("regression starts here", marked[0].text)
        better = [cp["first_run_id"] for cp in r["change_points"] if not cp["regression"]]
        self.assertEqual([int(x.get_attribute("data-run")) for x in
                          d.find_elements(By.CSS_SELECTOR, "#series tr.change-improvement")], better)
        self.assertTrue(d.find_elements(
            By.CSS_SELECTOR, f'#change-points tr.change-regression[data-first-run="{first_slow}"]'))
        notes = [a.get_attribute("title") or "" for a in
                 d.find_elements(By.CSS_SELECTOR, "#regression-chart .dygraphDefaultAnnotation")]
        self.assertTrue(any(f"from run {first_slow}" in n for n in notes), notes)
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, "#regression-chart canvas"))
        for g in r["regressions"]:
            self.assertTrue(d.find_elements(
                By.CSS_SELECTOR, f'#recorded tr[data-first-bad-run="{g["first_bad_run"]}"]'))
        # the README's two screenshots, refreshed on request
        out = os.environ.get("TUNECTL_WEB_README_SHOTS")
        if out:
            import shutil
            shutil.copy(os.path.join(ARTIFACTS, "regression.png"), os.path.join(out, "web-regression.png"))
            self.open(f"/experiments/{self.experiment_id}", "experiment")
            shutil.copy(os.path.join(ARTIFACTS, "experiment.png"), os.path.join(out, "web-experiment.png"))

    def test_the_running_batch_page_goes_live_to_its_corrected_members(self):
        """A real batch of two members: its page is live while it runs and then shows each
        member's p and adjusted p as `batch show -o json` has them. (Named to run last: its
        interleaved controls join the series of v2 the regression page is checked on.)"""
        c = self.c
        self.sign_in()
        # v2 (the freeze) loads with 4 threads; 0 (the main thread loads every batch) and 1 are
        # both clearly slower, so each member stops at the sequential design's first look, after
        # 4 pairs, with a real p. A cap of 6 leaves room for a noisy pair on a loaded machine;
        # a cap below 4 is refused (nothing is decided on fewer than 4 pairs).
        b = json.loads(c.cli("batch", "create", "--vary", "num_workers=0,1", "--repeats", "6",
                             "-o", "json").stdout)
        bid = b["id"]
        self.assertEqual(len(b["experiments"]), 2)
        # While it runs (its 16+ runs take ~20 s): the list and the page say so. A state read by
        # the CLI after the page was drawn is "running" only if the page's was too.
        d = self.open("/batches", "batches-running")
        row = d.find_element(By.CSS_SELECTOR, f'#batches tr[data-batch="{bid}"]')
        listed = self.field(row, f"state:{bid}")[0]
        d = self.open(f"/batches/{bid}", "batch-running")
        shown = d.find_element(By.ID, "batch-state").get_attribute("data-value")
        if c.json("batch", "show", str(bid))["state"] == "running":
            self.assertEqual((listed, shown), ("running", "running"))
            self.assertIn("live", d.find_element(By.ID, "status").text)
        # The page polls: it shows the batch done without a reload.
        d.execute_script("document.body.dataset.sameDocument = 'yes'")
        WebDriverWait(d, 240, poll_frequency=0.5,
                      ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: d.find_element(By.ID, "batch-state").get_attribute("data-value") == "done",
            f"batch {bid} done on its page")
        self.assertEqual(d.execute_script("return document.body.dataset.sameDocument"), "yes")
        s = c.json("batch", "show", str(bid))
        self.assertEqual(s["state"], "done")
        # the page's JSON is the CLI's
        status, _, body = self.fetch(f"/api/batches/{bid}", token=self.viewer)
        self.assertEqual((status, json.loads(body)), (200, s))
        # once complete, every member has its adjusted p
        self.assertTrue(all(e["adjusted_p"] is not None for e in s["experiments"]), s["experiments"])
        self.check_batch(d, s)  # as redrawn by the poll
        self.assertEqual(self.console_errors(), [])
        d = self.open(f"/batches/{bid}", "batch")
        self.check_batch(d, s)

        x = [x for x in c.items("batch", "list") if x["id"] == bid][0]
        d = self.open("/batches", "batches")
        row = d.find_element(By.CSS_SELECTOR, f'#batches tr[data-batch="{bid}"]')
        self.assertTrue(row.find_elements(By.CSS_SELECTOR, f'a[href="/batches/{bid}"]'))
        self.assertEqual(self.field(row, f"state:{bid}")[0], x["state"])
        self.assertEqual(int(self.field(row, f"members:{bid}")[0]), x["members"]["total"])
        for k, n in x["members"]["by_decision"].items():
            self.assertIn(f"{k} {n}", row.text)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


if __name__ == "__main__":
    unittest.main(verbosity=2)
