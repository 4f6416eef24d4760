#!/usr/bin/env python3
"""A Python twin of the sm_sharing round-3 engine (hw::run_persistent on hw::GpcPool, models::gemm_beside), for the
round-6 drain analysis of issue 19 (calibrate/data/h100/README.md, "Round 6 analysis"): the same placement, slots,
tile times and HBM stretch, with the late-cluster rule as a parameter so that candidate rules can be compared on
every measured point of rounds 1-6 without rebuilding the C++ engine. analyse_r6_drains.py checks that with the
engine's own rule it reproduces `fusesim run` on every case (it is a check of the twin, not a model).

Rules (`rule=`):
  "none"        the round-3..5 engine: late clusters start when the resident CTAs have drained
  "whole_wave"  the round-6 engine: + one tile time (tile_time(grid)) when the first drain ends on a whole wave
  any callable  rule(ctx) -> extra delay (s) added before the late clusters start at the first drain; ctx is a dict
                of the model's quantities (tiles, grid, cluster, S, L, rounds, ...).
"""
import heapq, json, math, os

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def load_map(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    n = len(rows)
    gpc = [0] * n; tpc = [0] * n; first = {}
    for r in rows:
        gpc[r["sm"]] = r["gpc"]; tpc[r["sm"]] = r["tpc"]
        if "dispatch_first" in r: first[r["dispatch_first"]] = r["sm"]
    return {"gpc": gpc, "tpc": tpc, "first": [first[i] for i in sorted(first)]}


def lanes(m, g):
    tp = {}
    for s, gg in enumerate(m["gpc"]):
        if gg == g: tp.setdefault(m["tpc"][s], []).append(s)
    out = []
    for t in sorted(tp):
        for i, s in enumerate(sorted(tp[t])):
            while len(out) <= i: out.append([])
            out[i].append(s)
    return out


def dispatch_placement(m, blocks):
    n = len(m["gpc"]); G = max(m["gpc"]) + 1
    out = []; used = [False] * n
    for s in m["first"]:
        if len(out) >= blocks: break
        out.append(s); used[s] = True
    L = [lanes(m, g) for g in range(G)]
    lane = 0
    while len(out) < min(blocks, n):
        q = [[s for s in (L[g][lane] if lane < len(L[g]) else []) if not used[s]] for g in range(G)]
        if not any(q):
            if lane > 64: break
            lane += 1; continue
        nx = [0] * G; placed = True
        while placed and len(out) < blocks:
            placed = False
            for g in range(G):
                if len(out) >= blocks: break
                if nx[g] < len(q[g]):
                    s = q[g][nx[g]]; nx[g] += 1; out.append(s); used[s] = True; placed = True
        lane += 1
    return out


def cluster_slots(m, held, c):
    G = max(m["gpc"]) + 1; free = [0] * G; h = set(held)
    for s, g in enumerate(m["gpc"]):
        if s not in h: free[g] += 1
    return sum(c * (f // c) for f in free)


class Sim:
    def __init__(self): self.q = []; self.seq = 0; self.now = 0.0
    def after(self, dt, fn): self.at(self.now + dt, fn)
    def at(self, t, fn): heapq.heappush(self.q, (t, self.seq, fn)); self.seq += 1
    def run(self):
        while self.q:
            t, _, fn = heapq.heappop(self.q); self.now = t; fn()


def run_persistent(m, tiles, grid, cluster, held, tile_time, rule="whole_wave", ctx=None):
    """hw::run_persistent on a fresh GpcPool with `held` SMs held for the whole run. Returns (end s, slots at launch,
    late CTAs, extra delay charged at the first drain)."""
    sim = Sim()
    G = max(m["gpc"]) + 1
    free = [0] * G
    hs = set(held)
    for s, g in enumerate(m["gpc"]):
        if s not in hs: free[g] += 1
    st = dict(tiles_left=tiles, not_started=grid, running=0, exited=0, slots=0, late=0, launched=False,
              finished=False, waiting=False, drained=False, first_exit=-1.0, end=None, extra=0.0)
    exited_clusters = []
    waiters = []

    def wake():
        w = list(waiters); waiters.clear()
        for fn in w: fn()

    def take_cluster(c):
        best = -1
        for g in range(G):
            if free[g] >= c and (best < 0 or free[g] > free[best]): best = g
        if best >= 0: free[best] -= c
        return best

    def give(g, c):
        free[g] += c; wake()

    def launch():
        st["waiting"] = False
        started = []
        while st["not_started"] > 0:
            c = min(cluster, st["not_started"])
            g = take_cluster(c)
            if g < 0: break
            st["not_started"] -= c; started.append((g, c))
        n = sum(c for _, c in started)
        if not st["launched"]: st["slots"] = n
        else: st["late"] += n
        st["launched"] = True
        st["running"] += n
        for g, c in started:
            left = [c]
            for _ in range(c): step(g, c, left)
        if st["not_started"] > 0 and not st["waiting"] and not st["finished"]:
            st["waiting"] = True; waiters.append(launch)

    def step(g, c, left):
        if st["tiles_left"] > st["not_started"]:
            st["tiles_left"] -= 1
            dt = tile_time(st["running"])
            sim.after(dt, lambda: step(g, c, left)); return
        st["running"] -= 1; st["exited"] += 1
        now = sim.now
        if st["first_exit"] < 0: st["first_exit"] = now
        left[0] -= 1
        if left[0] == 0: exited_clusters.append((g, c))
        if st["running"] == 0:
            back = list(exited_clusters); exited_clusters.clear()
            first = not st["drained"] and st["not_started"] > 0
            extra = 0.0
            if first and rule == "whole_wave":
                if tiles > grid and st["first_exit"] == now: extra = tile_time(grid)
            elif first and callable(rule):
                c2 = dict(ctx or {}); c2.update(slots=st["slots"], L=grid - st["slots"], first_exit=st["first_exit"],
                                              now=now, tile_grid=tile_time(grid))
                extra = rule(c2)
            st["drained"] = True
            if extra > 0:
                st["extra"] = extra
                def later(back=back):
                    for gg, cc in back: give(gg, cc)
                sim.after(extra, later)
            else:
                for gg, cc in back: give(gg, cc)
        if st["exited"] == grid and not st["finished"]:
            st["finished"] = True; st["end"] = now
    launch()
    sim.run()
    return st["end"], st["slots"], st["late"], st["extra"]


class Machine:
    def __init__(self, hw_yaml):
        import yaml
        d = yaml.safe_load(open(os.path.join(ROOT, hw_yaml)))
        def num(v):
            s = str(v["value"] if isinstance(v, dict) else v)
            for suf, f in (("TFLOPs", 1e12), ("GBps", 1e9)):
                if s.endswith(suf): return float(s[:-len(suf)]) * f
            return float(s)
        sm = d["smshare"]
        self.r0 = num(sm["tile_rate_at_zero"]); self.slope = num(sm["tile_rate_slope"])
        self.rmax = num(sm["tile_rate_max"]) if "tile_rate_max" in sm else -1
        self.kappa = num(sm["hbm_queue_kappa"]) if "hbm_queue_kappa" in sm else -1
        self.hbm = num(d["memory"]["fabric_bandwidth"])
        self.sms = int(num(d["gpu"]["compute_units"]))
        self.map = load_map(os.path.join(ROOT, "hw", d["tables"]["sm_map"]["file"]))

    def rate(self, n):
        line = self.r0 - self.slope * n
        return min(line, self.rmax) if self.rmax > 0 else line


def can_share(nb_threads, nb_regs, g_threads, g_regs, g_smem, nb_smem=0):
    rpb = lambda t, r: math.ceil(t / 32) * math.ceil(r * 32 / 256) * 256
    return (2 <= 32 and nb_threads + g_threads <= 2048 and rpb(nb_threads, nb_regs) + rpb(g_threads, g_regs) <= 65536
            and nb_smem + g_smem <= 233472)


def beside(M, p, rule="whole_wave", cdims=None, held_override=None):
    """models::gemm_beside for one scenario case's params p. Returns a dict of the model's quantities.
    cdims = (cM, cN): the cluster's shape in tiles (nvjet's AxB: A along ceil(n / tile_m), B along ceil(m / tile_n));
    given, the tile grid is rounded up to whole clusters (the scheduler's padded tiles); None: the engine's count."""
    Mt, Nt = math.ceil(p["n"] / p["tile_m"]), math.ceil(p["m"] / p["tile_n"])
    if cdims: Mt, Nt = math.ceil(Mt / cdims[0]) * cdims[0], math.ceil(Nt / cdims[1]) * cdims[1]
    tiles = Mt * Nt
    grid, cluster = p["grid"], p["cluster"]
    alone = p["alone_time_us"] * 1e-6
    rounds = math.ceil(tiles / grid)
    tile0 = alone / rounds
    ref = min(grid, M.sms)
    tt = lambda n: tile0 * M.rate(ref) / M.rate(min(max(n, 1), M.sms))
    stretch = 1.0
    if p["neighbour"] == "copy":
        u = p["neighbour_alone_GBps"] * 1e9 / M.hbm
        stretch = 1 + M.kappa * u / (1 - u)
    held = []
    if not can_share(p["neighbour_threads"], p["neighbour_regs"], p["gemm_threads"], p["gemm_regs"], p["gemm_smem_bytes"],
                     p.get("neighbour_smem_bytes", 0)):
        held = dispatch_placement(M.map, p["blocks"]) if held_override is None else list(held_override)
    ctx = dict(tiles=tiles, grid=grid, cluster=cluster, rounds=rounds, held=held, map=M.map)
    t_alone, s_alone, _, _ = run_persistent(M.map, tiles, grid, cluster, [], tt, rule="none")
    scale = alone / t_alone
    t_b, slots, late, extra = run_persistent(M.map, tiles, grid, cluster, held, tt, rule=rule, ctx=ctx)
    return dict(tiles=tiles, grid=grid, cluster=cluster, rounds=rounds, S=slots, L=grid - slots, late=late,
                extra_tiles=extra / tt(grid), pred_us=t_b * scale * stretch * 1e6, stretch=stretch,
                tile_us=tile0 * 1e6, scale=scale)
