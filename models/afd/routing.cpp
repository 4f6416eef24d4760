#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "models/afd/afd.hpp"

namespace fusesim::afd {

Routing route(int sources, int ffn_ranks, int tokens, int topk, int experts, int capacity,
              uint64_t seed) {
  if (sources < 1 || ffn_ranks < 1 || tokens < 1 || topk < 1 || experts < 1 || capacity < 1)
    throw std::invalid_argument(fmt::format(
        "route: sources {}, ffn_ranks {}, tokens {}, topk {}, experts {}, capacity {} must all be >= 1",
        sources, ffn_ranks, tokens, topk, experts, capacity));
  if (topk > experts) throw std::invalid_argument(fmt::format("route: topk {} > experts {}", topk, experts));
  if (experts % ffn_ranks != 0)
    throw std::invalid_argument(fmt::format("route: experts {} not divisible by ffn_ranks {}", experts, ffn_ranks));
  if (ffn_ranks > 32) throw std::invalid_argument("route: at most 32 FFN ranks");
  if (topk > 65535) throw std::invalid_argument(fmt::format("route: topk {} > 65535", topk));
  Routing r;
  r.sources = sources;
  r.ffn = ffn_ranks;
  r.tokens = tokens;
  r.hits.assign(sources, std::vector<uint32_t>(tokens, 0));
  r.rows.assign(sources, std::vector<uint16_t>(size_t(tokens) * ffn_ranks, 0));
  r.tokens_to.assign(sources, std::vector<int>(ffn_ranks, 0));
  r.rows_to.assign(sources, std::vector<int>(ffn_ranks, 0));
  const int per_rank = experts / ffn_ranks;
  // ids stays the identity between tokens: each token's swaps are undone in reverse order (the
  // same draws and the same subsets as an iota per token, without experts steps per token).
  std::vector<int> ids(experts), swapped(topk);
  std::iota(ids.begin(), ids.end(), 0);
  for (int s = 0; s < sources; ++s) {
    // One stream per source: token t of source s draws the same experts whatever T and the other
    // sources are, so one more token only adds work (monotonic in T).
    std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(s)};
    std::mt19937_64 rng(seq);
    std::vector<int> load(experts, 0);
    for (int t = 0; t < tokens; ++t) {
      // Partial Fisher-Yates: the first k entries are a uniform k-subset.
      for (int i = 0; i < topk; ++i) {
        std::uniform_int_distribution<int> d(i, experts - 1);
        swapped[i] = d(rng);
        std::swap(ids[i], ids[swapped[i]]);
        const int e = ids[i];
        if (load[e] >= capacity) { ++r.dropped_rows; continue; }
        ++load[e];
        const int f = e / per_rank;
        r.rows[s][size_t(t) * ffn_ranks + f]++;
        r.hits[s][t] |= 1u << f;
      }
      for (int i = topk; i-- > 0;) std::swap(ids[i], ids[swapped[i]]);
      for (int f = 0; f < ffn_ranks; ++f) {
        const int n = r.rows[s][size_t(t) * ffn_ranks + f];
        r.rows_to[s][f] += n;
        if (n) r.tokens_to[s][f]++;
      }
    }
  }
  return r;
}

}  // namespace fusesim::afd
