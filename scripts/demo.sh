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
echo "== The Show-and-Tell stand-in models/showtell-lstm (CNN + LSTM word captioner) on 4 test canvases of the captions data set (PNG + caption in $out/captions/)"
$bin data captions --model models/showtell-lstm --count 4 --out "$out/captions"

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
nmt=models/nmt-m30k-de-en
echo "== The German→English translator $nmt (Multi30k image descriptions; BPE, bidirectional LSTM, attention)"
$bin translate --model "$nmt" "Ein Mann fährt mit seinem Fahrrad über eine alte Brücke." \
  "Zwei kleine Kinder spielen im Sand am Strand." "Eine Frau mit einem roten Hut liest ein Buch im Park."
printf 'Ein schwarzer Hund rennt durch den Schnee.\nDrei Männer stehen vor einem Gebäude und unterhalten sich.\n' | $bin translate --model "$nmt" --json
m30k="${LENSPEC_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/lenspec}/multi30k"
if [[ -f "$m30k/test_2016_flickr.de.gz" ]]; then
  echo "== BLEU on Multi30k test_2016_flickr, the length of every clean output, against a word-by-word baseline"
  $bin eval --model "$nmt" --split test -q
  echo
  echo "== Text attack on it: gradient-guided token substitutions (flip), δ = 0.5, 2 test sentences (records name the corpus's sentences, never quote them)"
  $bin attack --model "$nmt" --split test --method flip --eps 0.5 --sentences 2 --budget 300 --out "$out/flip-m30k.jsonl"
else
  echo "(Multi30k is not imported here, so no BLEU and no corpus attack: lenspec data multi30k --from DIR imports it, DIR a copy of multi30k/dataset's data/task1/raw/)"
fi

echo
echo "== The earlier, weaker translator models/nmt-de-en (Debian's Ding dictionary; GPL-2+ weights)"
$bin translate --model models/nmt-de-en "Ich werde mein Äußerstes tun." "Wo ist der Bahnhof?"
echo "== Text attack on it: flip, δ = 0.5, 2 test sentences of the dictionary"
$bin attack --model models/nmt-de-en --method flip --eps 0.5 --sentences 2 --budget 300 --out "$out/flip.jsonl"

echo
echo "== Certified worst-case output length of image 1 at δ = 0.03 (models/mmnist-rnn-rs)"
$bin bound --model models/mmnist-rnn-rs --eps 0.03 --index 1 --timeout 20s
