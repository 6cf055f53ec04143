# Shared helpers for the multi-rank end-to-end tests: run mpipe under mpirun with a timeout.
# shellcheck shell=bash
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=${MPIPE_TEST_THREADS:-1} OMP_WAIT_POLICY=PASSIVE  # threads per rank
# Open MPI's point-to-point layer: ob1 (shared memory, TCP) is the one selected here anyway (Debian's
# openmpi-mca-params.conf excludes ucx); naming it spares every rank opening the others, 0.2 s of
# each mpirun start (0.57 s to 0.36 s for MPI_Init and a barrier on 2 ranks).
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
MPIPE=${MPIPE:?path of the mpipe binary}
WORK=$(mktemp -d /tmp/mpipe-e2e.XXXXXX)
trap '[[ -n "${KEEP_WORK:-}" ]] || rm -rf "$WORK"' EXIT

# train RANKS NAME CONFIG [--set ...]: trains into $WORK/NAME and exports $WORK/NAME.safetensors.
train() {
  local ranks=$1 name=$2 config=$3
  shift 3
  timeout 120 mpirun -n "$ranks" --oversubscribe --bind-to none "$MPIPE" train "$config" \
    --run-dir "$WORK/$name" --export-weights "$WORK/$name.safetensors" "$@" \
    > "$WORK/$name.log" 2>&1 || {
    local status=$?
    cat "$WORK/$name.log"
    echo "FAILED: $name (exit status $status)"
    exit 1
  }
}

# same A B [RTOL [COMPARE OPTION...]]: the exported weights of runs A and B agree (bit-identical
# when RTOL is 0); further options go to mpipe compare (e.g. --only REGEX).
same() {
  "$MPIPE" compare "$WORK/$1.safetensors" "$WORK/$2.safetensors" --rtol "${3:-0}" "${@:4}" \
    || { echo "FAILED: $1 vs $2"; exit 1; }
}

# endless RANKS NAME CONFIG [--set ...]: starts a run too long to finish into $WORK/NAME in the
# background (output in $WORK/NAME.log, one metrics line per step); $launcher is its process.
endless() {
  local ranks=$1 name=$2 config=$3
  shift 3
  timeout 120 mpirun -n "$ranks" --oversubscribe --bind-to none "$MPIPE" train "$config" \
    --set train.steps=100000000 --set log.every=1 --run-dir "$WORK/$name" "$@" \
    > "$WORK/$name.log" 2>&1 &
  launcher=$!
}

# wait_for_steps NAME STEPS SECONDS: waits until run NAME has logged STEPS steps; fails the test
# when SECONDS pass first (a bound for a hung run, far above a loaded machine's time), or when
# the run started by `endless` ($launcher) ended.
wait_for_steps() {
  local metrics=$WORK/$1/metrics.jsonl
  for _ in $(seq $(($3 * 20))); do
    [[ -f "$metrics" && $(wc -l < "$metrics") -ge $2 ]] && return
    [[ -z "${launcher:-}" ]] || kill -0 "$launcher" 2>/dev/null || break
    sleep 0.05
  done
  cat "$WORK/$1.log"
  echo "FAILED: $1: fewer than $2 steps logged (the run ended, or $3 s passed)"
  exit 1
}

# failed_in_one_line NAME STATUS MESSAGE RUN_DIR: the run whose output is $WORK/NAME.out exited
# with STATUS non-zero (not a timeout), has MESSAGE on exactly one line and one error line in
# all, no MPI_ABORT banner, and wrote no RUN_DIR.
failed_in_one_line() {
  local name=$1 status=$2 message=$3 run_dir=$4
  cat "$WORK/$name.out"
  [[ $status -ne 0 && $status -ne 124 ]] || { echo "FAILED: $name: exit status $status"; exit 1; }
  [[ $(grep -cF -- "$message" "$WORK/$name.out") -eq 1 ]] || { echo "FAILED: $name: message"; exit 1; }
  [[ $(grep -c "\[error\]" "$WORK/$name.out") -eq 1 ]] || { echo "FAILED: $name: not one line"; exit 1; }
  ! grep -q "MPI_ABORT" "$WORK/$name.out" || { echo "FAILED: $name: MPI_ABORT banner"; exit 1; }
  [[ ! -e "$run_dir" ]] || { echo "FAILED: $name: run directory was written"; exit 1; }
}

# rejected NAME MESSAGE CONFIG [mpipe train args...]: the run fails (not by timeout) with
# MESSAGE on exactly one line, never aborts, and leaves no run directory ($RUN_DIR if set,
# else $WORK/NAME).
rejected() {
  local name=$1 message=$2 config=$3 status=0 run_dir=${RUN_DIR:-$WORK/$1}
  shift 3
  # (Every rank exits by itself here, so mpirun need not wait odls_base_sigkill_timeout twice,
  # 2 s by default, before it ends: the rest of a job it kills gets no grace.)
  OMPI_MCA_odls_base_sigkill_timeout=0 timeout 60 mpirun -n 2 --oversubscribe --bind-to none \
    "$MPIPE" train "$config" --run-dir "$run_dir" "$@" > "$WORK/$name.out" 2>&1 || status=$?
  failed_in_one_line "$name" "$status" "$message" "$run_dir"
}

# fashion_mnist_subset CONFIG: prints CONFIG's path, or, when CONFIG trains on the built-in
# Fashion-MNIST (`data: {dataset: fashion_mnist, ...}` without a path), that of a copy of CONFIG
# in $WORK/subset/ (same file name) reading the first 2048 training and 512 test examples, written
# once to $WORK/fashion-mnist. Each rank of each run decompresses the whole 47 MB otherwise: about
# 0.5 s of CPU per rank, 40% of a 2-rank CNN run. What the CNN tests check (transparency across
# stages and replicas, batch-norm statistics, the memory model) holds on any images.
fashion_mnist_subset() {
  python3 - "$1" "$WORK" <<'PY'
import gzip, os, re, struct, sys
config, work = sys.argv[1], sys.argv[2]
text = open(config).read()
lines = [i for i, line in enumerate(text.splitlines()) if line.startswith("data:")]
data = text.splitlines()[lines[0]] if len(lines) == 1 else ""
if not re.fullmatch(r"data: \{dataset: fashion_mnist(, [^{}]*)?\}", data) or "path:" in data:
    print(config)
    sys.exit(0)
folder = os.path.join(work, "fashion-mnist")
if not os.path.isdir(folder):
    os.makedirs(folder)
    source = "/usr/share/datasets/fashion-mnist"
    for part, count in (("train", 2048), ("t10k", 512)):
        for kind, header, size in (("images-idx3", ">IIII", 28 * 28), ("labels-idx1", ">II", 1)):
            name = f"{part}-{kind}-ubyte.gz"
            with gzip.open(os.path.join(source, name), "rb") as f:
                fields = list(struct.unpack(header, f.read(struct.calcsize(header))))
                body = f.read(count * size)
            assert fields[1] >= count and len(body) == count * size, name
            fields[1] = count
            with gzip.open(os.path.join(folder, name), "wb", compresslevel=1) as f:
                f.write(struct.pack(header, *fields) + body)
copy = os.path.join(work, "subset", os.path.basename(config))
os.makedirs(os.path.dirname(copy), exist_ok=True)
open(copy, "w").write(text.replace(data, data.replace("data: {", f"data: {{path: {folder}, ", 1)))
print(copy)
PY
}
