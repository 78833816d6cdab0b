#!/usr/bin/python3
"""An independent check of data::read_fortunes + Tokenizer::chars + bigram_cross_entropy (data/text.h), in
plain Python: the corpus size, the char vocabulary and the add-one bigram baseline on the last 10%, as the
FortunesCorpus test prints them. Run as

    /usr/bin/python3 tools/text_bigram_baseline.py [folder]      # default /usr/share/games/fortunes
"""
import math
import os
import sys
from collections import Counter

folder = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/games/fortunes"
# read_fortunes: regular files only (no symlinks, subfolders, hidden files), no .dat/.u8, sorted, "\n" between.
names = sorted(
    n for n in os.listdir(folder)
    if not n.startswith(".") and not n.endswith((".dat", ".u8"))
    and os.path.isfile(os.path.join(folder, n)) and not os.path.islink(os.path.join(folder, n)))
text = "\n".join(open(os.path.join(folder, n), "rb").read().decode("utf-8") for n in names)

vocab = sorted(set(text))
index = {c: i for i, c in enumerate(vocab)}
ids = [index[c] for c in text]
n, v = len(ids), len(vocab)
train_end = math.floor(0.9 * n + 0.5)  # std::llround

# p(b | a) = (count(a, b) + 1) / (count(a) + V), fitted on the pairs inside [0, train_end), evaluated on the
# pairs whose second token lies in [train_end, n).
pairs = Counter(zip(ids[:train_end - 1], ids[1:train_end]))
rows = Counter(ids[:train_end - 1])
nats = -sum(math.log((pairs[(ids[i - 1], ids[i])] + 1) / (rows[ids[i - 1]] + v)) for i in range(train_end, n))
nats /= n - train_end
print(f"fortunes: {len(names)} files, {len(text.encode())} bytes, {n} chars, char vocab {v}, "
      f"bigram baseline {nats:.4f} nats/char")
