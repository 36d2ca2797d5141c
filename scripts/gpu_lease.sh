#!/usr/bin/env bash
# One GPU lease of the paper campaign (full width, bf16, runs side by side): the Fig. 1 jobs of
# each named network in turn (its diagnostic cells first, then its grid), each under its own time
# budget. It starts from a copy of the committed bundle (results/paper), so it skips the jobs done
# in earlier leases, and leaves the whole bundle in $OUT/paper: copy that over results/paper
# afterwards.  Usage on the device machine:
#     bash scripts/gpu_lease.sh ARCH:SECONDS [ARCH:SECONDS ...]
#     bash scripts/gpu_lease.sh resnet18:140 densenet121:260 vgg11:150
# A run that fails within a minute (the side-by-side trainer on this GPU) is retried one run
# after another in float32 (--trainer many).
set -u
export PYTHONUNBUFFERED=1 NADCORE_NATIVE=0
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/paper"
if [ -f results/paper/provenance.json ]; then
    cp -r results/paper/. "$OUT/paper/" && rm -f "$OUT/paper/README.md"
fi
nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
leg() {  # leg ARCH SECONDS [extra arguments]
    local arch=$1 secs=$2; shift 2
    local t0=$SECONDS
    timeout "$secs" python3 scripts/run_campaign.py --campaign paper --figures fig1 --archs "$arch" \
        --budget $((secs - 45)) --cache /tmp/nadcache --out "$OUT/paper" "$@"
    local rc=$?
    echo "== $arch: rc $rc after $((SECONDS - t0)) s"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((SECONDS - t0)) -lt 60 ] && [ $# -eq 0 ]; then
        leg "$arch" $((secs - (SECONDS - t0))) --trainer many
    fi
}
[ $# -gt 0 ] || set -- resnet18:280 densenet121:240
for spec in "$@"; do
    leg "${spec%%:*}" "${spec##*:}" 2>&1 | tee -a "$OUT/log.txt"
done
ls -la "$OUT/paper" "$OUT"/paper/*
