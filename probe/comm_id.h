// Communicator ids that every member computes identically without talking to
// the others: a hash of what all members pass to NCCL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ringside::probe {

// 64-bit FNV-1a over bytes, finished with a strong mixer; never 0 (0 means "no comm").
uint64_t hash_bytes(const void* data, size_t size, uint64_t seed = 0);

// Init from a unique id.  `use_index` is how many communicators this process
// created from the same unique-id bytes before (NCCL_COMM_ID makes every id equal).
uint64_t comm_id_from_unique_id(const void* unique_id, size_t size, uint32_t use_index);

// ncclCommInitRankScalable: all ids, in order.
uint64_t comm_id_from_unique_ids(const void* ids, size_t id_size, size_t n, uint32_t use_index);

// ncclCommSplit: the parent, the colour and the split ordinal on the parent
// (every member of the parent calls split the same number of times).
uint64_t comm_id_for_split(uint64_t parent_id, int32_t color, uint32_t ordinal);

// ncclCommShrink: the parent, the ordinal and the excluded ranks (order-insensitive).
uint64_t comm_id_for_shrink(uint64_t parent_id, uint32_t ordinal, std::span<const int> excluded);

// ncclCommInitAll: every member is in this process; host, pid and ordinal make it unique.
uint64_t comm_id_for_init_all(const char* host, int64_t pid, uint32_t ordinal);

}  // namespace ringside::probe
