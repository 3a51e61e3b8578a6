#!/usr/bin/env bash
# Policies × standard deviation, like Figs. 2–4 of Cesar et al. (2006): prints the mean time per
# iteration (ms) of each policy for task-time deviations of 0 to 80 % of the mean, then the ideal
# (task time / workers). Extra arguments go to every run, e.g.
#   ./sweep.sh --workers 16 --tasks 400 --mean-ms 6 --iterations 5
# Build first: cargo build --release -p synthetic
set -euo pipefail
cd "$(dirname "$0")"
# The binary is in the target folder of the workspace the project belongs to.
cd "$(dirname "$(cargo locate-project --workspace --message-format plain)")"
bin=${SYNTHETIC:-target/release/synthetic}
deviations=(0 0.2 0.4 0.6 0.8)
policies=(static fsc factoring dpf daf)

run() { "$bin" --backend local "$@"; }

printf '%-10s' "stddev"
for sd in "${deviations[@]}"; do printf '%8s' "$sd"; done
echo
ideal=()
for policy in "${policies[@]}"; do
    printf '%-10s' "$policy"
    for i in "${!deviations[@]}"; do
        summary=$(run --policy "$policy" --stddev "${deviations[$i]}" "$@")
        printf '%8s' "$(awk '/^time/ { print $6 }' <<<"$summary")"
        # The seed fixes the task times, so the ideal is the same under every policy.
        ideal[i]=$(awk '/^ideal/ { print $2 }' <<<"$summary")
    done
    echo
done
printf '%-10s' "ideal"
for i in "${!deviations[@]}"; do printf '%8s' "${ideal[$i]}"; done
echo
