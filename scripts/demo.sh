#!/usr/bin/env bash
# The main job on the shipped default model: what it does on a few test images.
set -euo pipefail
bin=bin/lenspec
model=models/mmnist-rnn
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"

echo "== Model: $model (config.json + model.safetensors)"
echo "== Test-set accuracy and the longest greedy output on the training set"
$bin eval --model "$model" --split test

echo
echo "== Greedy decoding of the first 8 test canvases (PNG copies in $out/)"
$bin data multimnist --split test --count 8 --out "$out" -q >/dev/null
$bin decode --model "$model" --index 0,1,2,3,4,5,6,7
echo
echo "== Decoding a PNG file"
$bin decode --model "$model" --image "$out/test-00000.png"
