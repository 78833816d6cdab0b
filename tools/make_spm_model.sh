#!/usr/bin/env bash
# Makes tests/data/spm_llama_style.model, a small SentencePiece model trained by sentencepiece's own
# spm_train (Debian's sentencepiece package: apt-get install sentencepiece) with Llama-2's settings (BPE,
# byte fallback, a dummy prefix space, digits split, <unk> <s> </s> at 0 1 2), and
# tests/data/spm_llama_style.ids: spm_encode's ids for each line of tests/data/spm_sample.txt. The tests
# check that Ember's Tokenizer::sentencepiece_file uses the given model exactly as the library's tools do.
# The training text is the fortunes package's "art" file (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spm_train --input=/usr/share/games/fortunes/art --model_prefix="$tmp/m" --model_type=bpe --vocab_size=400 \
  --byte_fallback=true --add_dummy_prefix=true --split_digits=true --normalization_rule_name=identity \
  --remove_extra_whitespaces=false --character_coverage=0.9995 --unk_id=0 --bos_id=1 --eos_id=2 \
  --input_sentence_size=0 --shuffle_input_sentence=false --num_threads=1 --minloglevel=2
cp "$tmp/m.model" "$out/spm_llama_style.model"
spm_encode --model="$out/spm_llama_style.model" --output_format=id < "$out/spm_sample.txt" > "$out/spm_llama_style.ids"
