// Store: the hash chain over the audit trail and the tuning log (core/audit_chain.h) — sealing
// new rows into it, loading everything for `audit verify`, and `audit export`'s pages.
#include <pqxx/pqxx>

#include "core/audit_chain.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace {

// One sealer at a time (the leader; a second server waits for it).
constexpr int64_t kSealLock = 7743001;

// Every row of both tables with the columns the chain covers (core ChainEntry), each as the text
// the hash covers; `at` in microseconds since the epoch. One select list for both, so they union.
const char* const kAuditRows =
    "SELECT 'audit' AS source, a.id, a.at, (EXTRACT(EPOCH FROM a.at) * 1000000)::bigint AS at_us, "
    "a.actor, a.kind, a.entity, COALESCE(a.entity_id::text, '') AS entity_id, '' AS workload_id, "
    "'' AS experiment_id, a.detail::text AS payload FROM audit_events a ";
const char* const kLogRows =
    "SELECT 'log' AS source, l.id, l.at, (EXTRACT(EPOCH FROM l.at) * 1000000)::bigint AS at_us, "
    "l.actor, l.kind, '' AS entity, '' AS entity_id, l.workload_id::text AS workload_id, "
    "COALESCE(l.experiment_id::text, '') AS experiment_id, l.entry::text AS payload FROM "
    "tuning_log l ";

ChainEntry EntryFrom(const pqxx::row& r) {
  ChainEntry e;
  e.source = r["source"].as<std::string>();
  e.id = r["id"].as<int64_t>();
  e.at_us = r["at_us"].as<int64_t>();
  e.actor = r["actor"].as<std::string>();
  e.kind = r["kind"].as<std::string>();
  e.entity = r["entity"].as<std::string>();
  e.entity_id = r["entity_id"].as<std::string>();
  e.workload_id = r["workload_id"].as<std::string>();
  e.experiment_id = r["experiment_id"].as<std::string>();
  e.payload = r["payload"].as<std::string>();
  return e;
}

ChainRow RowFrom(const pqxx::row& r) {
  return ChainRowOf(EntryFrom(r));
}

// An export row: the link's seq and hashes (0 and "" when no link covers it) and the entry.
AuditExportRow ExportRowFrom(const pqxx::row& r) {
  AuditExportRow out;
  out.seq = r["seq"].as<int64_t>();
  out.hash = r["hash"].as<std::string>();
  out.prev_hash = r["prev_hash"].as<std::string>();
  out.at = r["at_text"].as<std::string>();
  out.entry = EntryFrom(r);
  return out;
}

size_t Bytes(const AuditExportRow& r) {
  const ChainEntry& e = r.entry;
  return 64 + r.at.size() + r.hash.size() + r.prev_hash.size() + e.actor.size() + e.kind.size() +
         e.entity.size() + e.entity_id.size() + e.workload_id.size() + e.experiment_id.size() +
         e.payload.size();
}

}  // namespace

Result<int> Store::SealAudit(int max_rows) {
  return InTx<int>(pool_, clock_, [&](pqxx::work& w) -> Result<int> {
    w.exec_params("SELECT pg_advisory_xact_lock($1)", kSealLock);
    auto head = w.exec("SELECT seq, hash FROM audit_chain ORDER BY seq DESC LIMIT 1");
    int64_t seq = head.empty() ? 0 : head[0][0].as<int64_t>();
    std::string prev = head.empty() ? ChainGenesis() : head[0][1].as<std::string>();
    // Rows no link covers: newer than the sealed ones of their table, or recent (a transaction
    // that committed after a later id was sealed); older ones are left for verify to name.
    const std::string horizon = std::to_string(kSealHorizonMs / 1000);
    auto pending = [&](const char* select, const char* alias, const char* source) {
      return w.exec_params(
          std::string(select) + "WHERE (" + alias +
              ".id > COALESCE((SELECT max(row_id) FROM audit_chain WHERE source = $1), 0) OR " +
              alias + ".at >= tunectl_now() - make_interval(secs => " + horizon +
              ")) AND NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.source = $1 AND c.row_id = " +
              alias + ".id) ORDER BY " + alias + ".at, " + alias + ".id LIMIT $2",
          source, max_rows);
    };
    std::vector<ChainEntry> entries;
    for (const auto& r : pending(kAuditRows, "a", "audit")) entries.push_back(EntryFrom(r));
    for (const auto& r : pending(kLogRows, "l", "log")) entries.push_back(EntryFrom(r));
    std::stable_sort(entries.begin(), entries.end(), [](const ChainEntry& a, const ChainEntry& b) {
      return a.at_us != b.at_us ? a.at_us < b.at_us : a.source < b.source;
    });
    if (entries.size() > static_cast<size_t>(max_rows))
      entries.resize(static_cast<size_t>(max_rows));
    std::vector<ChainRow> rows;
    for (const auto& e : entries) rows.push_back(ChainRowOf(e));
    std::vector<int64_t> seqs, ids;
    std::vector<std::string> sources, hashes;
    for (const auto& r : rows) {
      prev = ChainHash(prev, r);
      seqs.push_back(++seq);
      sources.push_back(r.source);
      ids.push_back(r.id);
      hashes.push_back(prev);
    }
    if (!rows.empty())
      w.exec_params0(
          "INSERT INTO audit_chain(seq, source, row_id, hash) SELECT * FROM "
          "unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[])",
          PgArray(seqs), PgArray(sources), PgArray(ids), PgArray(hashes));
    return static_cast<int>(rows.size());
  });
}

Result<AuditCheck> Store::VerifyAudit(int64_t against_seq, const std::string& against_hash) {
  return InTx<AuditCheck>(pool_, clock_, [&](pqxx::work& w) -> Result<AuditCheck> {
    std::vector<ChainLink> links;
    for (const auto& r : w.exec("SELECT seq, source, row_id, hash FROM audit_chain ORDER BY seq"))
      links.push_back(
          {r[0].as<int64_t>(), r[1].as<std::string>(), r[2].as<int64_t>(), r[3].as<std::string>()});
    std::vector<ChainRow> rows;
    for (const auto& r : w.exec(kAuditRows)) rows.push_back(RowFrom(r));
    for (const auto& r : w.exec(kLogRows)) rows.push_back(RowFrom(r));
    const int64_t now_ms =
        w.exec("SELECT (EXTRACT(EPOCH FROM tunectl_now()) * 1000)::bigint")[0][0].as<int64_t>();
    AuditCheck out;
    out.report = VerifyChain(links, rows, now_ms, against_seq, against_hash);
    out.rows = static_cast<int64_t>(rows.size());
    out.pending = out.rows - out.report.links;
    if (!links.empty())
      out.head_sealed_at =
          w.exec_params1("SELECT tunectl_ts(sealed_at) FROM audit_chain WHERE seq = $1",
                         links.back().seq)[0]
              .as<std::string>();
    return out;
  });
}

Result<AuditExportPage> Store::ExportAudit(const ChainPage& page) {
  return InTx<AuditExportPage>(pool_, clock_, [&](pqxx::work& w) -> Result<AuditExportPage> {
    const std::string rows = std::string("(") + kAuditRows + "UNION ALL " + kLogRows + ") x";
    const std::string cover = " ON x.source = c.source AND x.id = c.row_id";
    // A link's row, looked up per link: the links are walked in seq order down their index and
    // the walk stops with the page (a join of the tables would sort the whole window first).
    const std::string row_of_link = std::string("(") + kAuditRows +
                                    "WHERE c.source = 'audit' AND a.id = c.row_id UNION ALL " +
                                    kLogRows + "WHERE c.source = 'log' AND l.id = c.row_id) x";
    std::string window = "x.at >= to_timestamp(" + std::to_string(page.since_ms) + " / 1000.0)";
    if (page.until_ms != 0)
      window += " AND x.at < to_timestamp(" + std::to_string(page.until_ms) + " / 1000.0)";
    const std::string columns =
        "x.source, x.id, x.at_us, x.actor, x.kind, x.entity, x.entity_id, x.workload_id, "
        "x.experiment_id, x.payload, "
        "to_char(x.at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS at_text";
    ChainPage p = page;
    if (p.upto_seq < 0) {
      // The first page: the window's links run from its first to its last link now; a row sealed
      // after this counts as not sealed, so later pages neither skip nor repeat it.
      auto span = w.exec("SELECT COALESCE(min(c.seq) - 1, 0), COALESCE(max(c.seq), 0) FROM " +
                         rows + " JOIN audit_chain c" + cover + " WHERE " + window);
      p.after_seq = std::max(p.after_seq, span[0][0].as<int64_t>());
      p.upto_seq = span[0][1].as<int64_t>();
    }
    AuditExportPage out;
    size_t bytes = 0;
    auto take = [&](const pqxx::result& result) {
      for (const auto& r : result) {
        AuditExportRow row = ExportRowFrom(r);
        const size_t size = Bytes(row);
        if (out.rows.size() == static_cast<size_t>(p.limit) ||
            (!out.rows.empty() && bytes + size > kMaxPageBytes)) {
          out.more = true;
          return;
        }
        bytes += size;
        out.rows.push_back(std::move(row));
      }
    };
    const int64_t want = p.limit + 1;  // one past the page: whether more follow
    if (p.after_source.empty())
      take(w.exec_params(
          "SELECT c.seq, c.hash, COALESCE(prev.hash, CASE WHEN c.seq = 1 THEN $3 ELSE '' END) AS "
          "prev_hash, " +
              columns + " FROM audit_chain c CROSS JOIN LATERAL " + row_of_link +
              " LEFT JOIN audit_chain prev ON prev.seq = c.seq - 1 WHERE c.seq > $1 AND c.seq <= "
              "$2 AND " +
              window + " ORDER BY c.seq LIMIT $4",
          p.after_seq, p.upto_seq, ChainGenesis(), want));
    if (!out.more)
      take(w.exec_params(
          "SELECT 0::bigint AS seq, '' AS hash, '' AS prev_hash, " + columns + " FROM " + rows +
              " WHERE " + window +
              " AND NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.source = x.source AND "
              "c.row_id = x.id AND c.seq <= $1) AND (x.source, x.id) > ($2, $3) ORDER BY "
              "x.source, x.id LIMIT $4",
          p.upto_seq, p.after_source, p.after_id, want - static_cast<int64_t>(out.rows.size())));
    if (out.more) {
      out.next = p;
      const AuditExportRow& last = out.rows.back();
      if (last.seq > 0) {
        out.next.after_seq = last.seq;
      } else {
        out.next.after_source = last.entry.source;
        out.next.after_id = last.entry.id;
      }
    }
    return out;
  });
}

}  // namespace tunectl
