#!/usr/bin/env bash
# The main job on the shipped default model: what it does on a few test
# images, a short output-lengthening attack and a short verification.
set -euo pipefail
bin=bin/lenspec
model=models/mmnist-rnn
out=${DEMO_OUT:-demo-out}
rm -rf "$out"
mkdir -p "$out"

echo "== Model: $model (config.json + model.safetensors)"
echo "== Test-set accuracy and the longest greedy output on the training set"
$bin eval --model "$model" --split test

echo
echo "== Greedy decoding of the first 8 test canvases (4x PNG copies in $out/)"
$bin data multimnist --split test --count 8 --out "$out" -q >/dev/null
$bin decode --model "$model" --index 0,1,2,3,4,5,6,7
echo
echo "== Decoding a PNG file"
$bin decode --model "$model" --image "$out/test-00000.png"

echo
echo "== PGD attack (paper's proxy J̃) at δ = 0.1 on 10 random test images, 1,000 steps"
$bin attack --model "$model" --method pgd --eps 0.1 --images 10 --budget 1000 --lr 0.005 \
  --out "$out/attack.jsonl"
echo "(witnesses: $out/attack.witnesses/, named by their record's key; replay one exactly with: $bin decode --model $model --input FILE.safetensors)"

echo
echo "== Verification at δ = 0.005 (K̂ = label length): robust / vulnerable / unknown"
$bin verify --model "$model" --eps 0.005 --images 5 --timeout 20s --out "$out/verify.jsonl"

echo
echo "== The same at δ = 0.02 on models/mmnist-rnn-rs (fine-tuned for verifiability; docs/models.md)"
$bin verify --model models/mmnist-rnn-rs --eps 0.02 --images 5 --timeout 20s --out "$out/verify-rs.jsonl"

echo
echo "== The German→English translator models/nmt-de-en (BPE, bidirectional LSTM, attention; GPL-2+ weights)"
$bin translate --model models/nmt-de-en "Ich werde mein Äußerstes tun." "Das Wetter ist heute schön." "Wo ist der Bahnhof?"
printf 'Er hat keine Zeit.\nWir sehen uns morgen.\n' | $bin translate --model models/nmt-de-en --json
echo "== BLEU on its test split (the Ding dictionary's sentences) against a word-by-word dictionary baseline"
$bin eval --model models/nmt-de-en --split test -q

echo
echo "== Text attack on the translator: gradient-guided token substitutions (flip), δ = 0.5, 2 dev sentences"
$bin attack --model models/nmt-de-en --method flip --eps 0.5 --sentences 2 --budget 300 --out "$out/flip.jsonl"

echo
echo "== Certified worst-case output length of image 1 at δ = 0.03 (models/mmnist-rnn-rs)"
$bin bound --model models/mmnist-rnn-rs --eps 0.03 --index 1 --timeout 20s
