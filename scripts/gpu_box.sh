#!/usr/bin/env bash
# scripts/gpu_box.sh: everything issue 36 asks of one GPU box, in one run with a time budget.
#
#   bash scripts/gpu_box.sh --prepare      here, first: traces into .gpu_box/, wheels into .whl/, sizes, shim build
#   bash scripts/gpu_box.sh --dry-run      the plan, nothing run
#   bash scripts/gpu_box.sh                on the GPU box (the device tool sets OUT; by hand: OUT=/some/dir)
#   bash scripts/gpu_box.sh --cpu          here: every step that runs without CUDA, on small inputs
#
# Options: --only STEP,STEP (pack runs too, unless --skip pack)  --skip STEP,STEP  --budget SECONDS (default 480; --cpu 1800)
#          --python PY (default python3)  --copies N (tiling of the 216k trace, default 11)
#          --job-copies N (time tiles per rank of the 64-rank job, default 20)
#
# Steps, in order (a step that fails does not stop the run; each has a time limit, cut to what is
# left of the budget, and a step with under 15 s left is skipped):
#   env           machine, GPU (nvidia-smi), driver, nvcc, python, torch, JAX versions
#   deps          tracetui's dependencies: import them, else install the carried wheels (.whl/) into $GPU_BOX_SITE
#   record        `tracetui record --device cuda`: the ET + Kineto pair of a small training step (rf_id link)
#   snapshot      the same recording under torch.cuda.memory._record_memory_history: a memory snapshot + its pair
#   jax           a jitted JAX training step under jax.profiler.trace: .xplane.pb (+ trace.json.gz)
#   driver        the LD_PRELOAD recorder (scripts/gpu_box/cuda_shim.c) built here; a small CUDA program
#                 (launch_probe.cu) run under it, then `tracetui record --device cuda`: a driver-call trace
#                 of libcuda calls + the pair of that run
#   bench_open    bench/bench_load.py on the 216k trace and its 11x tiling (2.4M events), decode over every
#                 core (and in one process: "cold open 1 proc"); then the cold open of the tiling with 4
#                 decode workers (tracetui's default cap) and 8
#   bench_startup bench/bench_startup.py: first paint and tree shown (bundled sample, 109k, 216k traces)
#   bench_job     bench/bench_job.py: 8 ranks and 64 ranks tiled from the carried 8-rank job, process pool
#                 and a 2-worker Dask LocalCluster
#   pack          everything written into at most 7 tars of at most 16 MiB in $OUT, beside gpu_box.log
# --cpu: record and jax on the CPU, snapshot skipped (it needs CUDA), driver recorded from a stub libcuda
# (scripts/gpu_box/shim_demo.c), benchmarks on small inputs.  Every step's whole output is in
# logs/<step>.log inside the tars; this script prints a short log (also $OUT/gpu_box.log).
set -uo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "$SELF")/.." && pwd)
HELP=$REPO/scripts/gpu_box
STEPS=(env deps record snapshot jax driver bench_open bench_startup bench_job)
declare -A CAP=([env]=60 [deps]=90 [record]=150 [snapshot]=150 [jax]=150 [driver]=200
                [bench_open]=240 [bench_startup]=120 [bench_job]=240)

say() { echo "  $*" >&3; }  # a line of the short log, from inside a step

# ---------------------------------------------------------------------------------------------- steps
step_env() {
    say "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || cat "$DATA/commit.txt" 2>/dev/null || echo unknown)"
    say "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM, $(uname -sr)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi
        say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | paste -sd ';')"
    else
        say "GPU: no nvidia-smi on PATH"
    fi
    if command -v nvcc >/dev/null; then say "nvcc: $(nvcc --version | grep -o 'release [^,]*, V[0-9.]*')"; else say "nvcc: not on PATH"; fi
    say "cc: $( (command -v gcc >/dev/null && gcc --version || cc --version) 2>/dev/null | head -1)"
    "$PY" - <<'EOF' >"$STAGE/versions.txt"
import platform, sys
print(f"python {platform.python_version()} ({sys.executable})")
try:
    import torch
    cuda = torch.cuda.is_available()
    dev = f", {torch.cuda.get_device_name(0)}" if cuda else ""
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuda available {cuda}{dev})")
except Exception as e:  # noqa: BLE001
    print(f"torch: not importable ({type(e).__name__}: {e})")
try:
    import jax
    print(f"jax {jax.__version__} (devices {jax.devices()})")
except Exception as e:  # noqa: BLE001
    print(f"jax: not importable ({type(e).__name__}: {e})")
EOF
    while read -r line; do say "$line"; done <"$STAGE/versions.txt"
    say "disk free under $WORK: $(df -h "$WORK" | awk 'NR == 2 {print $4}')"
}

DEPS_CHECK='import textual, rich, orjson, msgspec, numpy, pandas, isal, duckdb, dask, distributed, psutil'
deps_versions() {
    "$PY" -c 'import importlib.metadata as m
print(", ".join(f"{p} {m.version(p)}" for p in ("textual", "rich", "orjson", "msgspec", "numpy", "pandas", "isal", "duckdb", "distributed")))'
}

step_deps() {
    if "$PY" -c "$DEPS_CHECK" 2>/dev/null; then
        "$PY" -m compileall -q -j 0 "$REPO/tracetui" >/dev/null
        say "deps: all import: $(deps_versions)"
        return 0
    fi
    local wheels=("$WHL"/*.whl)
    if [[ -e ${wheels[0]} ]]; then
        mkdir -p "$SITE"
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}" ||
            { say "deps: pip install of ${#wheels[@]} wheels from $WHL into $SITE failed (see logs/deps.log)"; return 1; }
        say "deps: installed ${#wheels[@]} wheels ($(du -sh "$WHL" | cut -f1)) from $WHL into $SITE"
        # byte-compiled once here, as pip would have: otherwise the first measured start of each
        # benchmark pays for compiling textual, rich ... (the package itself: below)
        "$PY" -m compileall -q -j 0 "$SITE" >/dev/null
    else
        say "deps: no wheels in $WHL (bash scripts/gpu_box.sh --prepare makes them on a machine with PyPI)"
    fi
    if ! "$PY" -c "$DEPS_CHECK"; then
        say "deps: still missing: $("$PY" -c "
import importlib.util
print(' '.join(m for m in '$DEPS_CHECK'.replace('import ', '').split(', ') if importlib.util.find_spec(m) is None) or '(all found; an import failed: see logs/deps.log)')")"
        return 1
    fi
    "$PY" -m compileall -q -j 0 "$REPO/tracetui" >/dev/null
    say "deps: $(deps_versions)"
}

# the kernel streams and GPU event count of a Kineto file, and the ET link line of `tracetui info`
describe_pair() {
    local kineto=$1 et=$2
    "$PY" - "$kineto" <<'EOF' | while read -r line; do say "$line"; done
import gzip, sys
import orjson
d = orjson.loads(gzip.open(sys.argv[1]).read())
ev = d["traceEvents"]
gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
streams = sorted({(e.get("args") or {}).get("stream") for e in gpu} - {None})
rf = sum(1 for e in ev if (e.get("args") or {}).get("Record function id"))
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {len(ev):,} events, {len(gpu):,} GPU events "
      f"({sum(e.get('cat') == 'kernel' for e in gpu):,} kernels) on streams {streams or 'none'}, "
      f"{rf:,} events with a Record function id")
EOF
    local info
    info=$STAGE/logs/info_$(basename "$kineto" .json.gz).json
    "$PY" -m tracetui info "$kineto" --et "$et" --no-cache --json >"$info" || { say "tracetui info failed on the pair"; return 1; }
    "$PY" - "$info" <<'EOF' | while read -r line; do say "$line"; done
import json, sys
d = json.load(open(sys.argv[1]))
k = d["et_link"]
print(f"ET link ({k['method']}): linked {k['linked']:,} of {k['et_ops']:,} ET ops (by rf_id {k['by_rf_id']:,}, "
      f"by sequence {k['by_sequence']:,}, by order {k['by_order']:,}), ET-only {k['et_only']:,}, "
      f"Kineto-only {k['kineto_only']:,}")
EOF
}

step_record() {
    local out=$STAGE/traces name=${DEV}_transformer
    mkdir -p "$out"
    "$PY" -m tracetui record --device "$DEV" --name "$name" --out-dir "$out" --steps 2 || return 1
    say "wrote ${name}_et.json.gz ($(stat -c %s "$out/${name}_et.json.gz") B), ${name}_kineto.json.gz ($(stat -c %s "$out/${name}_kineto.json.gz") B)"
    describe_pair "$out/${name}_kineto.json.gz" "$out/${name}_et.json.gz"
}

step_snapshot() {
    "$PY" "$HELP/memory_snapshot.py" --out-dir "$STAGE/traces" --name cuda_transformer_mem
    local rc=$?
    if [[ $rc == 3 ]]; then say "$(tail -1 "$STAGE/logs/snapshot.log")"; return 3; fi
    [[ $rc == 0 ]] || return $rc
    grep -E '^snapshot:|_snapshot.pickle' "$STAGE/logs/snapshot.log" | while read -r line; do say "${line#"$STAGE/traces/"}"; done
    describe_pair "$STAGE/traces/cuda_transformer_mem_kineto.json.gz" "$STAGE/traces/cuda_transformer_mem_et.json.gz"
}

step_jax() {
    "$PY" "$HELP/jax_profile.py" --out-dir "$STAGE/traces" --platform "$JAX_PLATFORM"
    local rc=$?
    if [[ $rc == 3 ]]; then say "$(tail -1 "$STAGE/logs/jax.log")"; return 3; fi
    grep -E '^jax |xplane|json.gz|planes:' "$STAGE/logs/jax.log" | while read -r line; do say "${line#"$STAGE/traces/"}"; done
    return $rc
}

# a C compiler, and the cuda.h include flag ("" without one)
find_cc() {
    local c
    for c in ${CC:-} gcc cc; do command -v "$c" >/dev/null && { echo "$c"; return 0; }; done
    return 1
}
find_cuda_include() {
    local d
    for d in ${CUDA_HOME:-} /usr/local/cuda "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")")"; do
        [[ -n $d && -f $d/include/cuda.h ]] && { echo "-I$d/include"; return 0; }
    done
    return 1
}
build_shim() {  # build_shim DIR: DIR/libcuda_shim.so; says how
    local b=$1 cc inc
    mkdir -p "$b"
    cc=$(find_cc) || { say "driver: no C compiler (gcc, cc) on PATH: the LD_PRELOAD recorder cannot be built, so no driver-call capture"; return 1; }
    inc=$(find_cuda_include) || inc=""
    local against="without cuda.h (types declared in the shim)"
    if [[ -n $inc ]] && "$cc" -O2 -Wall -fPIC -shared -o "$b/libcuda_shim.so" "$HELP/cuda_shim.c" "$inc" -ldl -lpthread; then
        against="against ${inc#-I}/cuda.h (every wrapper checked against its declaration)"
    else
        [[ -n $inc ]] && say "driver: the shim does not compile against ${inc#-I}/cuda.h (a declaration differs: logs/driver.log); built without it"
        "$cc" -O2 -Wall -fPIC -shared -DCUDA_SHIM_NO_CUDA_H -o "$b/libcuda_shim.so" "$HELP/cuda_shim.c" -ldl -lpthread ||
            { say "driver: the shim did not compile with $cc (see logs/driver.log)"; return 1; }
    fi
    say "driver: shim built with $($cc --version | head -1) $against"
}

step_driver() {
    local b=$WORK/shim cap_mb=${CUDA_SHIM_MAX_MB:-48} trace lines name
    rm -rf "$b"
    build_shim "$b" || return 1
    trace=$b/cuda_trace.jsonl
    if [[ $MODE == gpu ]]; then
        name=cuda_transformer_driver
        local libcuda
        libcuda=$( (ldconfig -p 2>/dev/null | grep -m1 'libcuda.so.1 ' | sed 's/.*=> //') || true)
        # first the smallest CUDA program (launch_probe.cu) under the shim: which libcuda calls the
        # runtime makes for cudaMalloc, cudaMemcpyAsync, a launch and the synchronizes
        if command -v nvcc >/dev/null && nvcc -O2 -o "$b/launch_probe" "$HELP/launch_probe.cu"; then
            CUDA_SHIM_OUT=$b/probe.jsonl LD_PRELOAD=$b/libcuda_shim.so "$b/launch_probe" | while read -r line; do say "driver probe: $line"; done
            if [[ -s $b/probe.jsonl ]]; then
                say "driver probe under the shim:$(grep -m1 '^# cuda_shim: pid' "$b/probe.jsonl" | sed 's/^[^:]*: pid [0-9]*://' | cut -c1-400)"
                gzip -9 -n -c "$b/probe.jsonl" >"$STAGE/traces/launch_probe_driver.jsonl.gz"
            else
                say "driver probe: the shim wrote nothing for launch_probe"
            fi
        else
            say "driver probe: no nvcc, or launch_probe.cu did not build (logs/driver.log): skipped"
        fi
        say "driver: libcuda: ${libcuda:-not in the ldconfig cache}; recording tracetui record --device cuda under LD_PRELOAD (cap ${cap_mb} MB)"
        CUDA_SHIM_OUT=$trace CUDA_SHIM_MAX_MB=$cap_mb LD_PRELOAD=$b/libcuda_shim.so \
            "$PY" -m tracetui record --device cuda --name "$name" --out-dir "$STAGE/traces" --steps 2
        local rc=$?
        [[ $rc == 0 ]] || say "driver: the recording under the shim exited $rc (see logs/driver.log)"
    else
        name=stub_driver
        local c
        c=$(find_cc)
        "$c" -fPIC -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o "$b/libcuda.so.1" "$HELP/stub_libcuda.c" -ldl &&
            ln -sf libcuda.so.1 "$b/libcuda.so" &&
            "$c" -o "$b/shim_demo" "$HELP/shim_demo.c" -L"$b" -lcuda -ldl -lpthread -Wl,-rpath,"$b" || return 1
        say "driver: --cpu: the shim records the stub libcuda's calls (shim_demo.c), not a GPU run"
        CUDA_SHIM_OUT=$trace CUDA_SHIM_MAX_MB=$cap_mb LD_PRELOAD=$b/libcuda_shim.so "$b/shim_demo" fork || return 1
    fi
    if [[ ! -s $trace ]]; then
        say "driver: the shim wrote nothing: it was not loaded (LD_PRELOAD refused? see logs/driver.log) or the process made no libcuda call it wraps"
        return 1
    fi
    lines=$(grep -c '^{' "$trace")
    grep '^# cuda_shim: pid' "$trace" | while read -r line; do say "${line:0:400}"; done
    if [[ $lines == 0 ]]; then
        say "driver: the shim was loaded (banner in the file) but caught no call: libcuda was reached by a way it does not wrap"
        return 1
    fi
    gzip -9 -n -c "$trace" >"$STAGE/traces/$name.jsonl.gz"
    say "driver: $lines JSON lines ($(stat -c %s "$trace") B, $(stat -c %s "$STAGE/traces/$name.jsonl.gz") B gzipped) -> $name.jsonl.gz"
    "$PY" -m tracetui summary "$STAGE/traces/$name.jsonl.gz" --no-cache >"$STAGE/logs/driver_summary.txt" 2>&1 ||
        { say "driver: tracetui summary could not read it (see logs/driver_summary.txt)"; return 1; }
    grep -E '^[0-9,]+ events of a driver-call trace|^Kernel launches|^Iterations|^Synchronize calls:' "$STAGE/logs/driver_summary.txt" |
        while read -r line; do say "summary: ${line:0:300}"; done
    if [[ $MODE == gpu && -f $STAGE/traces/${name}_kineto.json.gz ]]; then
        "$PY" -m tracetui info "$STAGE/traces/${name}_kineto.json.gz" --driver "$STAGE/traces/$name.jsonl.gz" \
            --no-cache --json >"$STAGE/logs/info_driver.json" || { say "driver: tracetui info --driver failed"; return 1; }
        "$PY" - "$STAGE/logs/info_driver.json" <<'EOF' | while read -r line; do say "$line"; done
import json, sys
k = json.load(open(sys.argv[1])).get("driver_link") or {}
n = lambda key, f="{:,}": "-" if k.get(key) is None else f.format(k[key])  # noqa: E731
print(f"driver link to the Kineto trace of the same run: {n('linked')} of {n('kineto_calls')} Kineto calls linked "
      f"({n('confirmed')} confirmed by grid/block), {n('driver_calls')} driver calls, clock offset "
      f"{n('offset_us', '{:+,.1f}')} us +- {n('uncertainty_us', '{:,.1f}')} us")
EOF
    fi
}

T216_NAME=kineto/v100x2_nccl_216k.json.gz
T109_NAME=kineto/a100_cudagraph_nccl_rank0.json.gz
JOB8_NAME=multirank/param_dlrm_8ranks

need_data() {
    local f
    for f in "$@"; do
        [[ -e $DATA/$f ]] || { say "no $DATA/$f: run bash scripts/gpu_box.sh --prepare where ../shared is, and carry .gpu_box"; return 1; }
    done
}

step_bench_open() {
    need_data "$T216_NAME" || return 1
    local bench=$STAGE/bench tiling=$WORK/bench/v100x2_nccl_216k_x$COPIES.json.gz
    mkdir -p "$bench" "$WORK/bench"
    say "bench_load: TRACETUI_DECODE_WORKERS=$(nproc), the 216k trace and its ${COPIES}x tiling (made here by bench/scale_trace.py)"
    TRACETUI_DECODE_WORKERS=$(nproc) "$PY" "$HELP/bench_box.py" load -- --src "$DATA/$T216_NAME" --sizes "$COPIES" \
        --quick --no-hta --workdir "$WORK/bench" --json "$bench/bench_load.json" >"$bench/bench_load.md" || return 1
    "$PY" - "$bench/bench_load.json" <<'EOF' | while read -r line; do say "$line"; done
import json, sys
for r in json.load(open(sys.argv[1])):
    g = lambda k, f="{:.2f}": f.format(r[k]) if k in r else "-"  # noqa: E731
    print(f"{r['trace']}: {r['events']:,} events; floor {g('floor')} s, load {g('load')} s ({r.get('workers', 1)} decode procs), "
          f"cold open {g('cold_open')} s (1 proc {g('cold_open_1')} s), cached {g('cached_open', '{:.3f}')} s, "
          f"TUI navigable {g('tui_navigable')} s, summary cold/cached {g('summary_cold')}/{g('summary_cached')} s, "
          f"cold open tree peak {g('cold_sys_peak', '{:.0f}')} MB")
EOF
    [[ -f $tiling ]] || { say "no tiling $tiling"; return 1; }
    "$PY" "$HELP/bench_box.py" open-sweep "$tiling" --workers "$SWEEP" --work "$WORK/sweep" >"$bench/open_sweep.md" || return 1
    say "cold open of the ${COPIES}x tiling by TRACETUI_DECODE_WORKERS (s, tree peak MB): $(grep -E '^\| [0-9]+ \|' "$bench/open_sweep.md" | awk -F'|' '{gsub(/ /, ""); printf "%s: %s s %s MB; ", $2, $4, $6}')"
}

step_bench_startup() {
    need_data "$T216_NAME" "$T109_NAME" || return 1
    mkdir -p "$STAGE/bench"
    "$PY" "$REPO/bench/bench_startup.py" --repeats "$STARTUP_REPEATS" --trace "$REPO/sample_traces/h100_bert_inference.json.gz" \
        --trace "$DATA/$T109_NAME" --trace "$DATA/$T216_NAME" >"$STAGE/bench/bench_startup.md" || return 1
    say "bench_startup (medians of $STARTUP_REPEATS; trace | code | cache | python | imports | first paint | tree shown | cpu ms):"
    grep -E '^\| [a-z0-9_]+\.json\.gz +\| this' "$STAGE/bench/bench_startup.md" | cut -d'|' -f2-9 | tr -s ' ' |
        while read -r line; do say "  $line"; done
}

step_bench_job() {
    need_data "$JOB8_NAME/rank0_kineto.json.gz" || return 1
    mkdir -p "$STAGE/bench"
    say "bench_job: ranks $JOB_RANKS (8: the carried job itself; more: its ranks tiled $JOB_COPIES times each), modes ${JOB_MODES}"
    "$PY" "$HELP/bench_box.py" job --job8 "$DATA/$JOB8_NAME" -- --ranks "$JOB_RANKS" --copies "$JOB_COPIES" \
        --modes "$JOB_MODES" --work "$WORK/job" >"$STAGE/bench/bench_job.md"
    local rc=$?
    grep -E '^\| [0-9]+ \|' "$STAGE/bench/bench_job.md" | while read -r line; do say "$line"; done
    return $rc
}

# ---------------------------------------------------------------------------------------------- prepare
prepare() {
    local shared=${GPU_BOX_SHARED:-$REPO/../shared} f
    echo "prepare: traces from $shared/traces into $DATA"
    mkdir -p "$DATA/kineto" "$DATA/multirank"
    for f in "$T216_NAME" "$T109_NAME"; do
        cp -f "$shared/traces/$f" "$DATA/$f" || return 1
    done
    rm -rf "${DATA:?}/$JOB8_NAME"
    cp -r "$shared/traces/$JOB8_NAME" "$DATA/$JOB8_NAME" || return 1
    chmod -R u+w "$DATA"
    git -C "$REPO" rev-parse --short HEAD >"$DATA/commit.txt" 2>/dev/null || echo unknown >"$DATA/commit.txt"
    [[ -z $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]] || sed -i 's/$/ (with uncommitted changes)/' "$DATA/commit.txt"
    echo "prepare: wheels for Python 3.12 manylinux x86_64 into $WHL (scripts/gpu_box/wheels.txt)"
    mkdir -p "$WHL"
    "$PY_HOST" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$WHL" -r "$HELP/wheels.txt" || return 1
    local dups
    dups=$(for f in "$WHL"/*.whl; do basename "$f"; done | cut -d- -f1 | tr 'A-Z-.' 'a-z__' | sort | uniq -d)
    [[ -z $dups ]] || { echo "prepare: $WHL holds two versions of: $dups; delete the older (pip install stops on two)"; return 1; }
    sizes
    echo "prepare: the shim built here:"
    exec 3>&1
    build_shim "$WORK/shim_check"
}

sizes() {
    local tree whl data total
    tree=$(cd "$REPO" && git ls-files -co --exclude-standard -z 2>/dev/null | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
    whl=$(du -sb "$WHL" 2>/dev/null | cut -f1); whl=${whl:-0}
    data=$(du -sb "$DATA" 2>/dev/null | cut -f1); data=${data:-0}
    total=$((tree + whl + data))
    awk -v t="$tree" -v w="$whl" -v n="$(ls "$WHL"/*.whl 2>/dev/null | wc -l)" -v d="$data" -v s="$total" 'BEGIN {
        m = 1048576
        printf "sizes: working tree %.1f MiB + .whl %.1f MiB (%d wheels) + .gpu_box %.1f MiB = %.1f MiB of the 64 MiB that travel\n",
            t / m, w / m, n, d / m, s / m }'
    ((total <= 64 * 1048576)) || { echo "sizes: over 64 MiB: the device tool refuses the call"; return 1; }
}

# ---------------------------------------------------------------------------------------------- the run
usage() { sed -n '2,/^set -uo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; }

MODE=gpu
ACTION=run
ONLY=""
SKIP=""
BUDGET=""
PY=${GPU_BOX_PYTHON:-python3}
COPIES=11
JOB_COPIES=20
STEP=""
while (($#)); do
    case $1 in
        --cpu) MODE=cpu ;;
        --prepare) ACTION=prepare ;;
        --dry-run) ACTION=dry ;;
        --only) ONLY=$2; shift ;;
        --skip) SKIP=$2; shift ;;
        --budget) BUDGET=$2; shift ;;
        --python) PY=$2; shift ;;
        --copies) COPIES=$2; shift ;;
        --job-copies) JOB_COPIES=$2; shift ;;
        --step) STEP=$2; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "gpu_box.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
    shift
done

if [[ -n $STEP ]]; then  # one step, in a child run by run_step: the run's settings come from its environment
    MODE=$GB_MODE PY=$GB_PY COPIES=$GB_COPIES JOB_COPIES=$GB_JOB_COPIES
    "step_$STEP"
    exit $?
fi

for s in ${ONLY//,/ } ${SKIP//,/ }; do
    [[ " ${STEPS[*]} pack " == *" $s "* ]] || { echo "gpu_box.sh: no step '$s' (steps: ${STEPS[*]} pack)" >&2; exit 2; }
done
export REPO HELP
export DATA=${GPU_BOX_DATA:-$REPO/.gpu_box}
export WHL=${GPU_BOX_WHEELS:-$REPO/.whl}
export WORK=${GPU_BOX_WORK:-/tmp/gpu_box_work}
export SITE=${GPU_BOX_SITE:-/tmp/site}
export STAGE=$WORK/stage
export PYTHONPATH=$REPO:$SITE${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1  # a step cut at its limit keeps what it printed in its log
if [[ $MODE == gpu ]]; then
    export DEV=cuda JAX_PLATFORM=gpu SWEEP=${GPU_BOX_SWEEP:-4,8} JOB_RANKS=${GPU_BOX_JOB_RANKS:-8,64} STARTUP_REPEATS=3
    export JOB_MODES=${GPU_BOX_JOB_MODES:-local,cluster2,cluster16}
    BUDGET=${BUDGET:-480}
else
    export DEV=cpu JAX_PLATFORM=cpu SWEEP=${GPU_BOX_SWEEP:-1,2} JOB_RANKS=${GPU_BOX_JOB_RANKS:-8,16} STARTUP_REPEATS=1
    export JOB_MODES=${GPU_BOX_JOB_MODES:-local,cluster2}
    [[ $COPIES == 11 ]] && COPIES=2
    [[ $JOB_COPIES == 20 ]] && JOB_COPIES=2
    BUDGET=${BUDGET:-1800}
fi
PY_HOST=${PY_HOST:-$PY}
export GB_MODE=$MODE GB_PY=$PY GB_COPIES=$COPIES GB_JOB_COPIES=$JOB_COPIES

wanted() {
    local s=$1
    [[ -n $ONLY && ",$ONLY," != *",$s,"* ]] && return 1
    [[ ",$SKIP," == *",$s,"* ]] && return 1
    return 0
}

if [[ $ACTION == prepare ]]; then
    mkdir -p "$WORK"
    prepare
    exit $?
fi

if [[ $ACTION == dry ]]; then
    echo "plan ($MODE mode, budget ${BUDGET}s, python $PY, OUT ${OUT:-$REPO/gpu_box_out}, work $WORK):"
    for s in "${STEPS[@]}" pack; do
        if wanted "$s" || [[ $s == pack && ",$SKIP," != *",pack,"* ]]; then
            echo "  $s (at most ${CAP[$s]:-30}s)"
        else
            echo "  $s: not run (--only/--skip)"
        fi
    done
    echo "data: $DATA: $( [[ -e $DATA/$T216_NAME && -e $DATA/$T109_NAME && -e $DATA/$JOB8_NAME/rank0_kineto.json.gz ]] && echo present || echo 'MISSING (--prepare)')"
    echo "wheels: $WHL: $(ls "$WHL"/*.whl 2>/dev/null | wc -l) files"
    echo "tiling: ${COPIES}x of the 216k trace; job: ranks $JOB_RANKS, $JOB_COPIES tiles per rank; decode sweep $SWEEP; startup repeats $STARTUP_REPEATS"
    sizes
    exit 0
fi

OUT=${OUT:-$REPO/gpu_box_out}
mkdir -p "$OUT" "$WORK" || exit 2
rm -rf "$STAGE"
mkdir -p "$STAGE/logs" "$STAGE/traces" "$STAGE/bench"
rm -f "$OUT"/gpu_box_*.tar "$OUT/gpu_box.log"
LOG=$OUT/gpu_box.log
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!
T0=$(date +%s)
END=$((T0 + BUDGET))
RESERVE=25  # for pack and the closing lines
declare -A STATUS SECS
echo "gpu_box.sh ($MODE mode): budget ${BUDGET}s, steps: $(for s in "${STEPS[@]}"; do wanted "$s" && printf '%s ' "$s"; done)"

run_step() {
    local name=$1 now left t rc t1
    wanted "$name" || return 0
    now=$(date +%s)
    left=$((END - now - RESERVE))
    if ((left < 15)); then
        STATUS[$name]="not run: ${left}s of the budget left"
        echo "[$name] not run: ${left}s of the budget left"
        return 0
    fi
    t=$((CAP[$name] < left ? CAP[$name] : left))
    echo "[$name] (limit ${t}s)"
    timeout -k 10 "$t" bash "$SELF" --step "$name" 3>&1 >"$STAGE/logs/$name.log" 2>&1
    rc=$?
    t1=$(date +%s)
    SECS[$name]=$((t1 - now))
    case $rc in
        0) STATUS[$name]=ok ;;
        3) STATUS[$name]="skipped (says why above)" ;;
        124 | 137) STATUS[$name]="timed out after ${t}s" ;;
        *) STATUS[$name]="failed (exit $rc)" ;;
    esac
    if [[ $rc != 0 && $rc != 3 ]]; then
        echo "  ${STATUS[$name]}; the end of logs/$name.log:"
        tail -n 8 "$STAGE/logs/$name.log" | cut -c1-300 | sed 's/^/    | /'
    fi
}

for s in "${STEPS[@]}"; do run_step "$s"; done

if [[ ",$SKIP," != *",pack,"* ]]; then  # pack runs unless skipped by name (--only names the other steps)
    echo "[pack] $STAGE -> $OUT (at most 7 tars of 16 MiB beside gpu_box.log)"
    if "$PY" "$HELP/pack_out.py" "$STAGE" "$OUT" --max-files 7 --prefix gpu_box | sed 's/^/  /'; then
        STATUS[pack]=ok
    else
        STATUS[pack]="left files out (above)"
    fi
fi
echo "summary ($(($(date +%s) - T0))s of ${BUDGET}s):"
for s in "${STEPS[@]}" pack; do
    [[ -n ${STATUS[$s]:-} ]] || wanted "$s" && echo "  $s: ${STATUS[$s]:-not run}${SECS[$s]:+ (${SECS[$s]}s)}"
done
echo "files in $OUT: $(find "$OUT" -maxdepth 1 -type f | wc -l) (at most 8 come back):"
find "$OUT" -maxdepth 1 -type f -printf '  %f %s B\n' | sort
bad=0
for s in "${STEPS[@]}"; do
    wanted "$s" || continue
    [[ ${STATUS[$s]:-} == ok || ${STATUS[$s]:-} == skipped* ]] || bad=1
done
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null  # the log's last lines are written before the script ends
exit $bad
