// A window over the end of a job: each rank's last N ops, cut so that every
// op kept is kept on every member that made it.  `ringside watch` analyzes such
// a window at each poll, so what a poll reads and holds does not grow with the
// job's length; `ringside analyze --window-ops` does the same post-mortem.
//
// Ranks run at different points of the job, so "the last N rows of each file"
// holds different ops on different ranks.  The window therefore starts, per
// communicator, at the first collective sequence number that every member's
// last N rows (or its /pending snapshot) reach, and per send/recv channel
// (comm, sender, receiver) at the first per-peer sequence number both ends
// reach.  A member whose last rows hold no op of a communicator (or channel) at
// all did its last one before them: the rows before are scanned for it, once
// per row when a cache is kept between polls (OpWindowCache).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_reader_cache.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

struct TraceSet;
struct RankInfo;

// One direction of send/recv traffic in a communicator, by comm ranks.
struct P2PChannelId {
  uint64_t comm_id = 0;
  int32_t src = -1, dst = -1;
  bool operator==(const P2PChannelId&) const = default;
};
struct P2PChannelIdHash {
  size_t operator()(const P2PChannelId& c) const {
    return (c.comm_id * 0x9e3779b97f4a7c15ull) ^
           ((static_cast<uint64_t>(static_cast<uint32_t>(c.src)) << 32 |
             static_cast<uint32_t>(c.dst)) *
            0xbf58476d1ce4e5b9ull);
  }
};
// The channel a send/recv of comm rank `me` belongs to.
P2PChannelId channel_of(const trace::OpRecord& op, int32_t me);
// Likewise, for a send (else a receive) to or from `peer` in communicator `comm_id`.
P2PChannelId channel_of(uint64_t comm_id, bool send, int32_t peer, int32_t me);

// Where each communicator's and channel's analyzed ops begin.
struct OpWindow {
  uint64_t ops_per_rank = 0;                         // 0: the whole job (no window)
  std::unordered_map<uint64_t, uint64_t> first_seq;  // comm id -> first collective seq kept
  std::unordered_map<P2PChannelId, uint32_t, P2PChannelIdHash> first_peer_seq;

  bool active() const { return ops_per_rank > 0; }
  uint64_t first_seq_of(uint64_t comm_id) const {
    auto it = first_seq.find(comm_id);
    return it == first_seq.end() ? 0 : it->second;
  }
  // Whether an op of comm rank `me` is analyzed (always, without a window).
  bool keep(const trace::OpRecord& op, int32_t me) const;
};

// How far each communicator and channel got in the rows of one file before its
// window: the next sequence number after the last one seen there.
struct RowsBefore {
  uint64_t rows = 0;  // rows [0, rows) scanned
  std::unordered_map<uint64_t, uint64_t> next_seq;
  std::unordered_map<P2PChannelId, uint32_t, P2PChannelIdHash> next_peer_seq;
};

// Kept by `ringside watch` between polls, by file path: rows already scanned
// are never read again.
struct OpWindowCache {
  std::unordered_map<std::string, RowsBefore> files;
};

// What one file's window holds: the first sequence number of each communicator
// and channel (its last rows, then its /pending snapshot).
struct WindowFirsts {
  std::unordered_map<uint64_t, uint64_t> seq;
  std::unordered_map<P2PChannelId, uint32_t, P2PChannelIdHash> peer_seq;
  void note(const trace::OpRecord& op, int32_t me);
  // A collective of communicator `comm_id` with sequence number `s`.
  void note_seq(uint64_t comm_id, uint64_t s);
  // A send/recv of channel `ch` with per-peer sequence number `s`.
  void note_peer_seq(const P2PChannelId& ch, uint32_t s);
};

// Sets the window's cuts from every rank's first_row and `firsts` (indexed by
// global rank, filled while the files were loaded).  Passes over the ops read
// each file from its first_row on (every row: a rank's own timeline needs every
// op for its gaps) and match only the ops `keep` keeps.  Files are reopened
// only to scan rows before a window that lacks a communicator or channel.
// `readers`: files kept open (may be null).
void build_op_window(TraceSet& set, uint64_t ops_per_rank, const std::vector<WindowFirsts>& firsts,
                     OpWindowCache* cache, trace::TraceReaderCache* readers = nullptr);

// The first row of a file of `count` ops that a window of `ops_per_rank` reads.
inline uint64_t window_first_row(uint64_t count, uint64_t ops_per_rank) {
  return ops_per_rank == 0 || count <= ops_per_rank ? 0 : count - ops_per_rank;
}

}  // namespace ringside::analysis
