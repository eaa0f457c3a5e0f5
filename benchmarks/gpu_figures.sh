#!/usr/bin/env bash
# Issue 36's GPU figures in one run, for a session lent a GPU machine (about 6 minutes on
# one H100 with 16 cores). Every benchmark makes its own synthetic data there; random
# weights (no download). Prints the card and each benchmark's lines; with $OUT set, also
# writes them to $OUT/gpu_figures.txt.
#
#     bash benchmarks/gpu_figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
log="${OUT:-/tmp}/gpu_figures.txt"
# one benchmark failing is logged and the rest still run: device time is scarce
run() {
    echo "\$ python $*" | tee -a "$log"
    python "$@" 2>&1 | grep -v "No pretrained weights" | tee -a "$log" \
        || echo "FAILED (exit ${PIPESTATUS[0]}): python $*" | tee -a "$log"
}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$log"
nproc | sed 's/^/cores: /' | tee -a "$log"
# 1, 4: an evaluate call against the time inside the model, fp32 and bf16
run benchmarks/in_loop.py --arch ViT-B-32 --device cuda --repeats 3
run benchmarks/in_loop.py --arch ViT-B-32 --device cuda --precision bf16 --repeats 3
run benchmarks/in_loop.py --arch random-224 --device cuda --repeats 3
# 2: the README's first command on the GPU, and the images in threads against processes
run benchmarks/cold_start.py --device cuda --repeats 3
run benchmarks/cold_start.py --device cuda --arch random-224 --repeats 1
run benchmarks/image_workers.py --repeats 3
# 3: agreement of the device decode with PIL
run benchmarks/gpu_decode_agreement.py --device cuda --images 500
# 5: the plugin at the bare script, SugarCrepe-sized, bf16 and fp32, then decoding on the GPU
suite=(--examples 7511 --images 1560 --arch ViT-B-32 --device cuda --repeats 3)
run benchmarks/scoring_throughput.py "${suite[@]}" --precision bf16 --methods bare,plugin
run benchmarks/scoring_throughput.py "${suite[@]}" --precision fp32 --methods bare,plugin
run benchmarks/scoring_throughput.py "${suite[@]}" --precision bf16 --methods plugin --decode gpu
