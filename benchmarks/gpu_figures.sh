#!/usr/bin/env bash
# The GPU figures of docs/performance.md ("On a GPU") in one run, for a session lent a GPU
# machine. Every benchmark makes its own synthetic data there; random weights (no download).
# Prints the card and each benchmark's lines; with $OUT set, also writes them to
# $OUT/gpu_figures.txt. Steps (all by default, in this order): in_loop, cold_start,
# image_workers, decode, throughput. All of them ran past 9 minutes on one H100 with 16 cores
# (2026-11-28: in_loop and cold_start took about 8), so a 15-minute lease runs them in two
# calls, or only the steps still missing:
#
#     bash benchmarks/gpu_figures.sh
#     bash benchmarks/gpu_figures.sh image_workers throughput
set -euo pipefail
cd "$(dirname "$0")/.."
log="${OUT:-/tmp}/gpu_figures.txt"
steps=("$@")
known=(in_loop cold_start image_workers decode throughput)
[ ${#steps[@]} -gt 0 ] || steps=("${known[@]}")
for step in "${steps[@]}"; do
    if [[ " ${known[*]} " != *" $step "* ]]; then
        echo "unknown step '$step'; expected one of: ${known[*]}" >&2
        exit 2
    fi
done
# one benchmark failing is logged and the rest still run: device time is scarce
run() {
    echo "\$ python $*" | tee -a "$log"
    python "$@" 2>&1 | grep -v "No pretrained weights" | tee -a "$log" \
        || echo "FAILED (exit ${PIPESTATUS[0]}): python $*" | tee -a "$log"
}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$log"
nproc | sed 's/^/cores: /' | tee -a "$log"
suite=(--examples 7511 --images 1560 --arch ViT-B-32 --device cuda --repeats 3)
for step in "${steps[@]}"; do
    case "$step" in
    in_loop) # an evaluate call against the time inside the model, fp32 and bf16
        run benchmarks/in_loop.py --arch ViT-B-32 --device cuda --repeats 3
        run benchmarks/in_loop.py --arch ViT-B-32 --device cuda --precision bf16 --repeats 3
        run benchmarks/in_loop.py --arch random-224 --device cuda --repeats 3 ;;
    cold_start) # README's first command on the GPU, cold, cached and a second checkpoint
        run benchmarks/cold_start.py --device cuda --repeats 3
        run benchmarks/cold_start.py --device cuda --arch random-224 --repeats 1 ;;
    image_workers) # the images in threads against processes
        run benchmarks/image_workers.py --repeats 3 ;;
    decode) # agreement of the device decode with PIL
        run benchmarks/gpu_decode_agreement.py --device cuda --images 500 ;;
    throughput) # the plugin at the bare script, SugarCrepe-sized, then decoding on the GPU
        run benchmarks/scoring_throughput.py "${suite[@]}" --precision bf16 --methods bare,plugin
        run benchmarks/scoring_throughput.py "${suite[@]}" --precision fp32 --methods bare,plugin
        run benchmarks/scoring_throughput.py "${suite[@]}" --precision bf16 --methods plugin \
            --decode gpu ;;
    esac
done
