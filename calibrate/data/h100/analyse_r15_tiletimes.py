#!/usr/bin/env python3
"""Issue 19, round 7: how cuBLASLt's persistent GEMM hands units of work to late clusters (runs 15 and 16, H100).

Reads (all in this folder; standard library only):
  probe_smshare_tiletimes_r15_h100.jsonl      run 15: 6 shapes x B = 1, 2, 3, 4, 8, 12, 44; 3 launches each
  probe_smshare_tiletimes_r16_h100.jsonl      run 16: 1536x6144, 4096x3072 x B = 1..16, 18..32 by 2, 36, 40, 44, 48
  probe_smshare_tiletimes_big_r16_h100.jsonl  run 16: 6144x6144, 4096x4096, 8192x8192 x B = 2, 4, 8; 2 launches each
The runs were on one NVIDIA H100 80GB HBM3 on 2026-12-06 (run 15 at commit 0ad86af, run 16 at commit 1d676bc),
probe `probe_smshare --mode tiletimes` (hw/kernels/probe_smshare.hip.cpp); each record's "command" holds its
command line (run 15's are also in commands_run15_h100.txt).

Each "tile_times" record is one GEMM launch (bf16 C = X W^T, C row-major m x n) beside a neighbour of `blocks`
(B) blocks that poll C: `point_write_us` holds, for point (i, c) (row-major over point_rows x point_cols), the
time in us after the launch stamp at which C[min(m-1, i*s+s-1)][min(n-1, c*s+s-1)] (s = poll_step) was first
seen written (-1: never). "gemm_alone" records hold the GEMM's alone time (not used here).

Kernels (ncu: cuBLASLt nvjet, grid (2, 66, 1) for all: G = 66 clusters of 2 CTAs). A tile_m x tile_n tile has
tile_m along n (C's columns) and tile_n along m (C's rows); cluster AxB: A tiles along the column-tile
dimension, B along the row-tile dimension:
  "v"    192x192, cluster 2x1: 1536x6144, 3072x4608, 3648x3840, 3072x3072, 6144x6144
  "h"    256x128, cluster 1x2: 4096x3072, 2688x4608, 4096x4096
  "h320" 320x128, cluster 1x2: 8192x8192
A unit is one cluster's pair of tiles; the tile grid is padded to whole clusters and U = padded tiles / 2.

Analysis:
 1. Per launch, a tile's completion = the latest write time of its points; the sorted completion times are cut
    into waves where they jump by more than 15 us; units per wave = tiles per wave / 2. Padded tiles are never
    written, so a padded shape (2688x4608: 21 row tiles in clusters of 2) has half units: for it only the
    number of waves is compared. S = units with a tile written in wave 0 (the clusters resident at launch).
 2. Late work ids: the unit order of the "v" kernel is bands of 8 row tiles (along m); within a band the column
    pairs in order, ascending in even bands and descending in odd ones (serpentine), rows ascending within a
    pair. For the "h" kernel on 4096x3072 the first 66 units are column tiles 0..10 x row pairs 0..5, unit =
    col*6 + pair. Work id w is the cluster whose first unit is unit w; the late ids at a B are the units among
    the first 66 not written in wave 0. Run 16 (B = 1..48) gives the nested order in which ids turn late as B
    grows: this is the measured tail (W_V, W_H below, from the highest blockIdx down).
 3. The hand-out rule ("model", the drafts' `simulate`): G clusters, U units, S cluster slots. Clusters launch
    in blockIdx order, the first S at launch, the others ("late", the L = G - S highest blockIdx, whose work
    ids are the first L of the tail) as soon as a resident cluster exits. Every other blockIdx has one of the
    remaining work ids. The cluster with work id w runs units w and w + G (those < U) first, then takes units
    from a shared counter that starts at 2G, while the counter is < U. With equal unit times, the units run in
    each time step are the units of a wave. Two other rules, for comparison, on the same configurations:
      "round3": the late clusters keep one unit each and start only when every resident cluster has exited;
                the residents take units from a counter while the units left > the late clusters not started.
      "static": cluster w runs w, w + G, w + 2G, ... (all static); late ids = the measured tail, launched as
                slots free up, as in the model.
    A rule matches a configuration (shape, B) when its units per wave equal the measured ones (for the padded
    shape: its number of waves equals the measured number); the measured ones must agree over all launches of
    the configuration (run 15 and run 16 records of one shape and B are pooled).
 4. The ids that turn late at the same B (2 to 4 ids at B = 26..48) come in an order the data do not fix (the
    tail keeps the drafts' order); the script reverses that order within each group and reports which rule's
    units per wave change and the matches then (every measured L is a whole number of groups, so only the
    launch order among the late clusters changes). The tails are measured on 1536x6144 (v) and 4096x3072 (h);
    they are applied to the other shapes of the kernel (checked on every v launch) and W_H to 4096x4096 and
    8192x8192 (320x128) as an assumption: there U >= 2G, every cluster has both static units in the model, but
    the static rule's cluster w has ceil((U - w) / G) units, so its results there depend on the ids.

Run from the repository root:
  python3 calibrate/data/h100/analyse_r15_tiletimes.py > calibrate/data/h100/tiletimes_r15_r16_waves.txt
"""
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = [("r15", "probe_smshare_tiletimes_r15_h100.jsonl"),
         ("r16", "probe_smshare_tiletimes_r16_h100.jsonl"),
         ("r16big", "probe_smshare_tiletimes_big_r16_h100.jsonl")]
G = 66            # clusters in the grid (2, 66, 1)
GAP_US = 15.0     # a new wave where the sorted tile completion times jump by more than this

# (m, n) -> (kernel name, tile_m (along n), tile_n (along m), A (cluster along column tiles), B (along row tiles))
KERNELS = {
    (1536, 6144): ("v", 192, 192, 2, 1), (3072, 4608): ("v", 192, 192, 2, 1), (3648, 3840): ("v", 192, 192, 2, 1),
    (3072, 3072): ("v", 192, 192, 2, 1), (6144, 6144): ("v", 192, 192, 2, 1),
    (4096, 3072): ("h", 256, 128, 1, 2), (2688, 4608): ("h", 256, 128, 1, 2), (4096, 4096): ("h", 256, 128, 1, 2),
    (8192, 8192): ("h320", 320, 128, 1, 2),
}
KERNEL_LABEL = {"v": "192x192 2x1", "h": "256x128 1x2", "h320": "320x128 1x2"}
SHAPE_ORDER = list(KERNELS)

# The measured tail (step 2, run 16): work ids of the late clusters from the highest blockIdx down, as the round-7
# draft analysis (model.py) wrote them; the script checks every prefix at a measured B against the late ids of every
# launch whose unit order is known. Within a group of ids that turn late at the same B the order is the drafts'
# (descending ids in W_V, ascending in W_H: not measured).
W_V = [65, 56, 64, 55, 47, 39, 31, 23, 15, 63, 54, 46, 38, 30, 22, 14, 62, 53, 45, 37, 61, 29, 21, 13, 52, 44, 36]
W_H = [65, 11, 59, 5, 22, 39, 56, 8, 25, 53, 64, 16, 33, 50, 2, 19, 47, 58, 10, 27, 13, 41, 44, 61, 4, 21, 52]
TAIL = {"v": W_V, "h": W_H, "h320": W_H}   # h320 (1x2 like h): W_H assumed (docstring, step 4)


# ---------------------------------------------------------------- measured waves

def geometry(m, n):
    """Column tiles, row tiles (real), the padded counts, U."""
    name, tm, tn, a, b = KERNELS[(m, n)]
    nc, nr = -(-n // tm), -(-m // tn)
    ncp, nrp = -(-nc // a) * a, -(-nr // b) * b
    return nc, nr, ncp, nrp, ncp * nrp // 2


def tile_completion(j):
    """{(column tile, row tile): latest write time of its points (us)}; also the number of unseen points."""
    m, n = j["m"], j["n"]
    _, tm, tn, _, _ = KERNELS[(m, n)]
    s, pr, pc, t = j["poll_step"], j["point_rows"], j["point_cols"], j["point_write_us"]
    assert len(t) == pr * pc
    done, unseen = {}, 0
    for i in range(pr):
        r = min(m - 1, i * s + s - 1)
        for c in range(pc):
            col = min(n - 1, c * s + s - 1)
            v = t[i * pc + c]
            if v < 0:
                unseen += 1
            key = (col // tm, r // tn)
            done[key] = max(done.get(key, v), v)
    return done, unseen


class Launch:
    """One tile_times record: each tile's wave, units per wave, S."""

    def __init__(self, run, j):
        self.run, self.m, self.n, self.B, self.repeat = run, j["m"], j["n"], j["blocks"], j["repeat"]
        self.kernel, _, _, self.ca, self.cb = KERNELS[(self.m, self.n)]
        nc, nr, ncp, nrp, self.U = geometry(self.m, self.n)
        self.padded = (nc, nr) != (ncp, nrp)
        done, self.unseen = tile_completion(j)
        assert len(done) == nc * nr, (self.m, self.n, len(done))
        ends = sorted(done.values())
        bounds = [[ends[0], ends[0]]]                      # [first, last] completion time of each wave
        for e in ends[1:]:
            if e - bounds[-1][1] > GAP_US:
                bounds.append([e, e])
            else:
                bounds[-1][1] = e
        self.bounds = bounds
        self.wave = {k: next(i for i, b in enumerate(bounds) if v <= b[1]) for k, v in done.items()}
        tiles_per_wave = collections.Counter(self.wave.values())
        self.units_per_wave = [tiles_per_wave[i] / 2 for i in range(len(bounds))]
        # units (cluster tile groups) with a tile in wave 0, and units whose tiles fall in different waves
        unit_waves = collections.defaultdict(set)
        for (c, r), w in self.wave.items():
            unit_waves[(c // self.ca, r // self.cb)].add(w)
        self.S = sum(1 for ws in unit_waves.values() if 0 in ws)
        self.split_units = sum(1 for ws in unit_waves.values() if len(ws) > 1)

    def unit_wave(self, tiles):
        """The wave of a unit given as its tiles (the later tile's wave; padded tiles ignored)."""
        return max(self.wave[t] for t in tiles if t in self.wave)


def load():
    out = []
    for run, f in FILES:
        with open(os.path.join(HERE, f)) as fh:
            for line in fh:
                j = json.loads(line)
                if j["measure"] == "tile_times":
                    out.append(Launch(run, j))
    return out


# ---------------------------------------------------------------- unit orders and late work ids

def unit_order_v(m, n, band=8):
    """The "v" kernel's unit order: each unit as its two tiles (column tile, row tile)."""
    nc, nr, _, _, _ = geometry(m, n)
    pairs, order = (nc + 1) // 2, []
    for bd in range(-(-nr // band)):
        rows = range(bd * band, min(nr, (bd + 1) * band))
        for p in (range(pairs) if bd % 2 == 0 else range(pairs - 1, -1, -1)):
            for r in rows:
                order.append(((2 * p, r), (2 * p + 1, r)))
    return order


def first_units_h_4096x3072():
    """The "h" kernel on 4096x3072: the first 66 units, unit = col*6 + pair (column tiles 0..10, row pairs 0..5)."""
    return [((c, 2 * p), (c, 2 * p + 1)) for c in range(11) for p in range(6)]


def first_units(L):
    """The first G units of a launch, where the unit order is known; else None."""
    if L.kernel == "v":
        return unit_order_v(L.m, L.n)[:G]
    if (L.m, L.n) == (4096, 3072):
        return first_units_h_4096x3072()
    return None


def late_ids(L):
    """Work ids among the first G units not written in wave 0 (sorted), or None where the order is unknown."""
    units = first_units(L)
    if units is None:
        return None
    return [w for w, u in enumerate(units) if L.unit_wave(u) != 0]


# ---------------------------------------------------------------- the hand-out rules (equal unit times)

def late_and_residents(S, tail):
    L = G - S
    assert 0 <= L <= len(tail), ("the tail is shorter than the late clusters", L, len(tail))
    late = tail[:L]                                   # from the highest blockIdx down
    lateset = set(late)
    residents = [w for w in range(G) if w not in lateset]
    return residents, late[::-1]                      # late in launch order (ascending blockIdx)


def run_slots(U, S, residents, queue, first_list, take):
    """Generic step simulation: running clusters each hold a list of static units; a cluster whose list is empty
    asks take() for a unit (None: it exits); late clusters (queue) launch into free slots. Returns units/step."""
    running = {w: first_list(w) for w in residents}
    queue = list(queue)
    waves = []
    while running or queue:
        for w in list(running):
            if not running[w]:
                u = take()
                if u is None:
                    del running[w]
                else:
                    running[w].append(u)
        while queue and len(running) < S:
            w = queue.pop(0)
            lst = first_list(w)
            if not lst:
                u = take()
                if u is not None:
                    lst.append(u)
            if lst:
                running[w] = lst
        if not running:
            break
        n = 0
        for lst in running.values():
            if lst:
                lst.pop(0)
                n += 1
        waves.append(n)
    return waves


def simulate_model(U, S, tail):
    """Static units w and w + G, then a shared counter from 2G; late clusters launch as slots free up."""
    residents, queue = late_and_residents(S, tail)
    counter = [2 * G]

    def take():
        if counter[0] < U:
            counter[0] += 1
            return counter[0] - 1
        return None
    return run_slots(U, S, residents, queue, lambda w: [u for u in (w, w + G) if u < U], take)


def simulate_static(U, S, tail):
    """Cluster w runs w, w + G, w + 2G, ... < U; late clusters launch as slots free up."""
    residents, queue = late_and_residents(S, tail)
    return run_slots(U, S, residents, queue, lambda w: list(range(w, U, G)), lambda: None)


def simulate_round3(U, S):
    """Round-3 rule: residents take units from a counter while the units left > the late clusters not started;
    the late clusters (one unit each) start once every resident has exited (in batches of S slots)."""
    late_left, left, waves = G - S, U, []
    running = S
    while running:
        n = 0
        for _ in range(running):
            if left > late_left:
                left -= 1
                n += 1
        running = n                                    # the others found left <= late_left and exited
        if n:
            waves.append(n)
    while late_left:
        n = min(S, late_left, left)
        if n == 0:
            break
        waves.append(n)
        late_left -= n
        left -= n
    return waves


RULES = [("model", lambda U, S, tail: simulate_model(U, S, tail)),
         ("round3", lambda U, S, tail: simulate_round3(U, S)),
         ("static", lambda U, S, tail: simulate_static(U, S, tail))]


# ---------------------------------------------------------------- output helpers

def fmt_waves(ws):
    """'62*13+22+4': a value repeated k >= 3 times as value*k."""
    out, i = [], 0
    while i < len(ws):
        k = i
        while k < len(ws) and ws[k] == ws[i]:
            k += 1
        v = ws[i]
        s = str(int(v)) if float(v).is_integer() else f"{v:g}"
        out.append(f"{s}*{k - i}" if k - i >= 3 else "+".join([s] * (k - i)))
        i = k
    return "+".join(out)


def matches(measured, sim, padded):
    if padded:
        return len(measured) == len(sim)
    return [float(x) for x in measured] == [float(x) for x in sim]


def reversed_within_groups(tail, groups):
    """The tail with the order reversed inside each group of ids that turn late at the same B."""
    out, i = [], 0
    for g in groups:
        out += tail[i:i + g][::-1]
        i += g
    return out + tail[i:]


def main():
    launches = load()
    p = print

    p("# Issue 19 round 7: GEMM tile completion waves beside a polling neighbour, runs 15 and 16 (one NVIDIA H100 80GB")
    p("# HBM3, 2026-12-06; run 15 at commit 0ad86af, run 16 at 1d676bc); written by analyse_r15_tiletimes.py (its")
    p("# docstring has the method). G = 66 clusters of 2 CTAs; U units (padded tiles / 2); S = units in wave 0;")
    p("# L = G - S late clusters; waves as units per wave, 'a*k' = a repeated k times. Rules: model (static w, w+G,")
    p("# then a counter from 2G; late start as slots free up), round3, static (see the docstring). Flags Y/n: the")
    p("# rule's units per wave equal the measured ones (2688x4608 is padded: number of waves only, flag w).")
    p("")

    # ------------------------------------------------ sanity of the wave cut
    unseen = sum(L.unseen for L in launches)
    split = sum(L.split_units for L in launches)
    min_gap = min(L.bounds[i + 1][0] - L.bounds[i][1] for L in launches for i in range(len(L.bounds) - 1))
    max_spread = max(b[1] - b[0] for L in launches for b in L.bounds)
    runs = collections.Counter(L.run for L in launches)
    p(f"launches: {len(launches)} ({', '.join(f'{r} {k}' for r, k in runs.items())}); unseen points: {unseen}; "
      f"units whose two tiles fall in different waves: {split}")
    p(f"wave cut (> {GAP_US:g} us): smallest gap between waves {min_gap:.1f} us, largest spread within a wave "
      f"{max_spread:.1f} us")
    p("")

    # ------------------------------------------------ per configuration
    configs = collections.OrderedDict()
    for L in sorted(launches, key=lambda L: (SHAPE_ORDER.index((L.m, L.n)), L.B)):
        configs.setdefault((L.m, L.n, L.B), []).append(L)

    hdr = (f"{'shape':<10} {'kernel':<17} {'B':>3} {'U':>4} {'S':>3} {'L':>3} {'n':>2}  {'measured':<26} "
           + "  ".join(f"{name:<28}" for name, _ in RULES) + "  flags(" + "/".join(n for n, _ in RULES) + ")")
    p(hdr)
    p("-" * len(hdr))
    totals = collections.Counter()
    misses = collections.defaultdict(list)
    disagree = []
    results = {}
    for (m, n, B), Ls in configs.items():
        L0 = Ls[0]
        same = all(L.units_per_wave == L0.units_per_wave and L.S == L0.S for L in Ls)
        if not same:
            disagree.append((m, n, B))
        meas, S, U = L0.units_per_wave, L0.S, L0.U
        tail = TAIL[L0.kernel]
        sims, flags = [], []
        for name, rule in RULES:
            sim = rule(U, S, tail)
            ok = same and matches(meas, sim, L0.padded)
            totals[name] += ok
            if not ok:
                misses[name].append(f"{m}x{n} B={B}")
            sims.append(sim)
            flags.append(("w" if L0.padded else "Y") if ok else "n")
        results[(m, n, B)] = (U, S, L0.padded, meas, sims)
        p(f"{m}x{n:<5} {L0.kernel + ' ' + KERNEL_LABEL[L0.kernel]:<17} {B:>3} {U:>4} {S:>3} {G - S:>3} {len(Ls):>2}  "
          f"{fmt_waves(meas) + ('' if same else ' (launches differ)'):<26} "
          + "  ".join(f"{fmt_waves(s):<28}" for s in sims) + "  " + " ".join(flags))
    p("")
    p("n = launches pooled (all runs); L = late clusters.")
    p("")

    # ------------------------------------------------ late work ids (run 16, B = 1..48)
    p("Late work ids (units among the first 66 not written in wave 0), run 16, as B grows:")
    groups = {}
    for kernel, shape in (("v", (1536, 6144)), ("h", (4096, 3072))):
        p("")
        p(f"  kernel {kernel} ({KERNEL_LABEL[kernel]}), {shape[0]}x{shape[1]}, run 16:")
        p(f"  {'B':>3} {'S':>3} {'L':>3}  nested  new late ids (ascending)")
        prev, order, grp = set(), [], []
        for L in sorted((L for L in launches if L.run == "r16" and (L.m, L.n) == shape), key=lambda L: L.B):
            ids = set(late_ids(L))
            new = sorted(ids - prev)
            nested = prev <= ids
            if new:
                order += new
                grp.append(len(new))
            p(f"  {L.B:>3} {L.S:>3} {G - L.S:>3}  {'yes' if nested else 'NO':<6}  {' '.join(map(str, new))}")
            prev = ids
        groups[kernel] = grp
        tail = TAIL[kernel]
        same_groups, i = True, 0
        for g in grp:
            same_groups &= set(order[i:i + g]) == set(tail[i:i + g])
            i += g
        p(f"  order of first lateness (ascending inside a group): {' '.join(map(str, order))}")
        p(f"  tail used ({'W_V' if kernel == 'v' else 'W_H'}):                          {' '.join(map(str, tail))}")
        ok = same_groups and len(order) == len(tail)
        p(f"  the same ids turn late at each B as in the tail: {'yes' if ok else 'NO'}; group sizes {grp}")

    # every launch with a known unit order: its late ids = the tail's first G - S?
    checked = agree = 0
    bad = []
    for L in launches:
        ids = late_ids(L)
        if ids is None:
            continue
        checked += 1
        if set(ids) == set(TAIL[L.kernel][:G - L.S]) and len(ids) == G - L.S:
            agree += 1
        else:
            bad.append(f"{L.run} {L.m}x{L.n} B={L.B} r{L.repeat}")
    p("")
    p(f"launches whose unit order is known (all v shapes, h 4096x3072): late ids = the tail's first G - S in "
      f"{agree}/{checked}" + (f"; not: {', '.join(bad)}" if bad else ""))

    # the order inside a group of ids that turn late at the same B is not measured: reverse it and compare
    changed, alt_totals = [], collections.Counter()
    for (m, n, B), (U, S, padded, meas, sims) in results.items():
        kernel = KERNELS[(m, n)][0]
        alt = reversed_within_groups(TAIL[kernel], groups["v" if kernel == "v" else "h"])
        same = (m, n, B) not in disagree
        for (name, rule), sim in zip(RULES, sims):
            asim = rule(U, S, alt)
            aok = same and matches(meas, asim, padded)
            alt_totals[name] += aok
            if asim != sim:
                changed.append(f"{name} {m}x{n} B={B}: {fmt_waves(asim)} ({'match' if aok else 'no match'})")
    p("tail order reversed inside each group of ids that turn late at the same B (not fixed by the data):")
    p(f"  units per wave changed in {len(changed)} rule x configuration(s)" + (":" if changed else ""))
    for c in changed:
        p(f"    {c}")
    p("  matched with the reversed order: "
      + ", ".join(f"{name} {alt_totals[name]}/{len(results)}" for name, _ in RULES))
    p("")

    # ------------------------------------------------ totals
    p(f"Totals over {len(configs)} configurations (shape, B) "
      f"({sum(1 for r in results.values() if r[2])} padded: number of waves only):")
    if disagree:
        p("  launches of one configuration disagree (counted as no match): "
          + ", ".join(f"{m}x{n} B={b}" for m, n, b in disagree))
    else:
        p("  all launches of each configuration give the same units per wave and S")
    for name, _ in RULES:
        p(f"  {name:<7} {totals[name]:>3}/{len(configs)} matched exactly"
          + (f"; not matched: {', '.join(misses[name])}" if misses[name] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
