// Store: the hash chain over the audit trail and the tuning log (core/audit_chain.h) — sealing
// new rows into it, and loading everything for `audit verify`.
#include <pqxx/pqxx>

#include "core/audit_chain.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace tunectl {

using namespace internal;  // NOLINT(google-build-using-namespace): the store's own helpers

namespace {

// One sealer at a time (the leader; a second server waits for it).
constexpr int64_t kSealLock = 7743001;

// Every column the chain covers, as text, in a fixed order; `at` in microseconds since the epoch.
const char* const kAuditRows =
    "SELECT 'audit' AS source, a.id, (EXTRACT(EPOCH FROM a.at) * 1000)::bigint AS at_ms, "
    "ARRAY[(EXTRACT(EPOCH FROM a.at) * 1000000)::bigint::text, a.actor, a.kind, a.entity, "
    "COALESCE(a.entity_id::text, ''), a.detail::text] AS fields FROM audit_events a ";
const char* const kLogRows =
    "SELECT 'log' AS source, l.id, (EXTRACT(EPOCH FROM l.at) * 1000)::bigint AS at_ms, "
    "ARRAY[(EXTRACT(EPOCH FROM l.at) * 1000000)::bigint::text, l.workload_id::text, "
    "COALESCE(l.experiment_id::text, ''), l.kind, l.actor, l.entry::text] AS fields FROM "
    "tuning_log l ";

ChainRow RowFrom(const pqxx::row& r) {
  ChainRow c;
  c.source = r["source"].as<std::string>();
  c.id = r["id"].as<int64_t>();
  c.at_ms = r["at_ms"].as<int64_t>();
  auto arr = r["fields"].as_array();
  for (auto e = arr.get_next(); e.first != pqxx::array_parser::juncture::done; e = arr.get_next())
    if (e.first == pqxx::array_parser::juncture::string_value) c.fields.push_back(e.second);
  return c;
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
    std::vector<ChainRow> rows;
    for (const auto& r : pending(kAuditRows, "a", "audit")) rows.push_back(RowFrom(r));
    for (const auto& r : pending(kLogRows, "l", "log")) rows.push_back(RowFrom(r));
    std::stable_sort(rows.begin(), rows.end(), [](const ChainRow& a, const ChainRow& b) {
      return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : a.source < b.source;
    });
    if (rows.size() > static_cast<size_t>(max_rows)) rows.resize(static_cast<size_t>(max_rows));
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

}  // namespace tunectl
