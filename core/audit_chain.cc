#include "core/audit_chain.h"

#include <array>
#include <cstring>
#include <map>
#include <set>
#include <utility>

namespace tunectl {
namespace {

constexpr std::array<uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t Rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

void Block(std::array<uint32_t, 8>& h, const unsigned char* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 |
           uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 =
        k + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
    const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  while (n >= 64) {
    Block(h, p);
    p += 64;
    n -= 64;
  }
  unsigned char tail[128] = {};
  std::memcpy(tail, p, n);
  tail[n] = 0x80;
  const size_t len = n + 1 + 8 <= 64 ? 64 : 128;
  const uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  Block(h, tail);
  if (len == 128) Block(h, tail + 64);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h)
    for (int s = 28; s >= 0; s -= 4) out += kHex[(v >> s) & 0xf];
  return out;
}

const std::string& ChainGenesis() {
  static const std::string zeros(64, '0');
  return zeros;
}

std::string AuditHeadMessage(int64_t seq, const std::string& hash) {
  return "tunectl audit head v1\n" + std::to_string(seq) + "\n" + hash + "\n";
}

std::string CanonicalRow(const ChainRow& row) {
  std::string out = row.source + "\n" + std::to_string(row.id) + "\n";
  for (const auto& f : row.fields) out += std::to_string(f.size()) + ":" + f + "\n";
  return out;
}

ChainRow ChainRowOf(const ChainEntry& e) {
  ChainRow r{e.source, e.id, e.at_us / 1000, {std::to_string(e.at_us)}};
  if (e.source == "log")
    r.fields.insert(r.fields.end(), {e.workload_id, e.experiment_id, e.kind, e.actor, e.payload});
  else
    r.fields.insert(r.fields.end(), {e.actor, e.kind, e.entity, e.entity_id, e.payload});
  return r;
}

std::string ChainHash(const std::string& prev_hash, const ChainRow& row) {
  return Sha256Hex(prev_hash + "\n" + CanonicalRow(row));
}

ChainReport VerifyChain(const std::vector<ChainLink>& links, const std::vector<ChainRow>& rows,
                        int64_t now_ms, int64_t against_seq, const std::string& against_hash) {
  ChainReport r;
  r.links = static_cast<int64_t>(links.size());
  r.head_hash = links.empty() ? ChainGenesis() : links.back().hash;
  r.head_seq = links.empty() ? 0 : links.back().seq;
  std::map<std::pair<std::string, int64_t>, const ChainRow*> by_key;
  for (const auto& row : rows) by_key[{row.source, row.id}] = &row;
  auto fail = [&](const ChainLink& l, const std::string& kind, const std::string& detail) {
    r.broken = ChainBreak{l.seq, l.source, l.row_id, kind, detail};
    return r;
  };
  std::string prev = ChainGenesis();
  std::set<std::pair<std::string, int64_t>> covered;
  std::map<std::string, int64_t> max_sealed;
  for (size_t i = 0; i < links.size(); ++i) {
    const ChainLink& l = links[i];
    const std::string name = l.source + " row " + std::to_string(l.row_id);
    const int64_t want_seq = static_cast<int64_t>(i) + 1;
    if (l.seq != want_seq)
      return fail(l, l.seq < want_seq ? "reordered" : "deleted",
                  "link " + std::to_string(l.seq) + " stands where link " +
                      std::to_string(want_seq) + " should" +
                      (l.seq > want_seq ? ": links " + std::to_string(want_seq) + ".." +
                                              std::to_string(l.seq - 1) + " are gone"
                                        : ""));
    auto it = by_key.find({l.source, l.row_id});
    if (it == by_key.end())
      return fail(l, "deleted", name + " is gone; link " + std::to_string(l.seq) + " covered it");
    const std::string expect = ChainHash(prev, *it->second);
    if (expect != l.hash) {
      // Its content still gives its hash after another link: the links were moved; else the row
      // (or the link) was changed.
      for (size_t j = 0; j <= links.size(); ++j) {
        const std::string& p = j == 0 ? ChainGenesis() : links[j - 1].hash;
        if (p != prev && ChainHash(p, *it->second) == l.hash)
          return fail(l, "reordered",
                      name + " was sealed after " +
                          (j == 0 ? std::string("the chain's start")
                                  : "the link now at " + std::to_string(links[j - 1].seq)) +
                          ", not where link " + std::to_string(l.seq) + " now stands");
      }
      return fail(l, "edited",
                  name + " no longer matches its hash (sealed at link " + std::to_string(l.seq) +
                      "): its content was changed, or a link before it was");
    }
    if (!covered.insert({l.source, l.row_id}).second)
      return fail(l, "inserted", name + " is covered twice");
    max_sealed[l.source] = std::max(max_sealed[l.source], l.row_id);
    prev = l.hash;
  }
  for (const auto& row : rows) {
    if (covered.count({row.source, row.id})) continue;
    auto hw = max_sealed.find(row.source);
    const bool newer = hw == max_sealed.end() || row.id > hw->second;
    if (newer || row.at_ms >= now_ms - kSealHorizonMs) continue;  // waiting for the sealer
    r.broken = ChainBreak{0, row.source, row.id, "inserted",
                          row.source + " row " + std::to_string(row.id) +
                              " is older than the sealed entries around it but in no link: it was "
                              "put into the sealed past"};
    return r;
  }
  if (against_seq > 0) {
    if (r.head_seq < against_seq) {
      r.broken = ChainBreak{r.head_seq + 1, "", 0, "truncated",
                            "the chain ends at link " + std::to_string(r.head_seq) +
                                " but the kept head is link " + std::to_string(against_seq)};
      return r;
    }
    const ChainLink& l = links[static_cast<size_t>(against_seq - 1)];
    if (l.hash != against_hash)
      return fail(l, "edited",
                  "link " + std::to_string(against_seq) +
                      " differs from the kept head: the history up to it was rewritten");
  }
  return r;
}

}  // namespace tunectl
