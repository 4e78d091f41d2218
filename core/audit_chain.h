// The tamper-evident chain over the audit trail and the tuning log: each entry's hash is
// SHA-256(previous hash ‖ the entry's canonical serialisation), in the order the sealer saw them
// committed. One implementation for the server that seals and for `audit verify`. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tunectl {

// SHA-256 of `data` as 64 lowercase hex digits (FIPS 180-4).
std::string Sha256Hex(std::string_view data);

// The hash before the first entry: 64 zeros.
const std::string& ChainGenesis();

// One row of audit_events or tuning_log as the chain covers it: every column, as text.
struct ChainRow {
  std::string source;  // "audit" | "log"
  int64_t id = 0;
  int64_t at_ms = 0;                // when it was written (for the sealing horizon)
  std::vector<std::string> fields;  // the row's columns in a fixed order, as stored
};

// One row of audit_events or tuning_log column by column, each as the text the chain hashes (an
// absent id is ""); what `audit export` writes, so a file is enough to re-hash it.
struct ChainEntry {
  std::string source;  // "audit" | "log"
  int64_t id = 0;
  int64_t at_us = 0;  // when it was written, microseconds since the epoch
  std::string actor, kind;
  std::string entity, entity_id;           // audit events: what it is about ("experiment", "3")
  std::string workload_id, experiment_id;  // log entries
  std::string payload;                     // audit: detail (jsonb), log: entry (json), as text
};

// The one order of the columns the hash covers (docs/security.md, "Export"):
//   audit: at_us, actor, kind, entity, entity_id, payload
//   log:   at_us, workload_id, experiment_id, kind, actor, payload
ChainRow ChainRowOf(const ChainEntry& e);

// A row no link covers yet is waiting for the sealer when it is newer than every sealed row of its
// table or younger than this; older ones were put into the sealed past: inserted.
inline constexpr int64_t kSealHorizonMs = 10 * 60 * 1000;

// Length-prefixed, so no two different rows serialise alike: "audit\n7\n3:abc\n0:\n…".
std::string CanonicalRow(const ChainRow& row);
std::string ChainHash(const std::string& prev_hash, const ChainRow& row);

// One link as stored in audit_chain.
struct ChainLink {
  int64_t seq = 0;  // 1, 2, 3 … without gaps
  std::string source;
  int64_t row_id = 0;
  std::string hash;
};

struct ChainBreak {
  int64_t seq = 0;  // the first link that does not hold (0: a row outside the chain)
  std::string source;
  int64_t row_id = 0;
  // edited (the row's content no longer gives its hash), deleted (the row is gone), inserted (a
  // row no link covers, or a link whose hash is not its predecessor's continuation), reordered
  // (links out of sequence or sequence numbers missing), truncated (the chain ends before a
  // signed head it should extend)
  std::string kind;
  std::string detail;
};

struct ChainReport {
  int64_t links = 0;
  std::string head_hash;  // the last link's hash (ChainGenesis() when empty)
  int64_t head_seq = 0;
  std::optional<ChainBreak> broken;  // the first break, in chain order
};

// Walks `links` (in seq order) against `rows` (every row of both tables, any order) and names the
// first break in chain order; rows no link covers come after the links (see kSealHorizonMs).
// When `against_seq` > 0 the chain must still hold link `against_seq` with `against_hash` (a head
// kept elsewhere): shorter is truncated, another hash there is a rewritten history.
ChainReport VerifyChain(const std::vector<ChainLink>& links, const std::vector<ChainRow>& rows,
                        int64_t now_ms, int64_t against_seq = 0,
                        const std::string& against_hash = "");

// The text a kept head's signature covers: "tunectl audit head v1\n<seq>\n<hash>\n".
std::string AuditHeadMessage(int64_t seq, const std::string& hash);

}  // namespace tunectl
