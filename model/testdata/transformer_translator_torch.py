
# The harness of TestTransformerTranslatorPyTorch, run after docs/models.md's
# "# transformer-translator" block (the class above):
#   export DIR SEED SECTION_JSON EOS MAX_STEPS EOS_BIAS
#                                                a random model of that shape to DIR,
#                                                its end of sequence favoured by EOS_BIAS
#   decode DIR                                   greedy outputs of DIR's model, in
#                                                float64, for the sources on stdin
import sys

mode, path = sys.argv[1], sys.argv[2]
if mode == "export":
    torch.manual_seed(int(sys.argv[3]))
    m = TransformerTranslator(json.loads(sys.argv[4]))
    with torch.no_grad():
        for p in m.parameters():  # layer norms away from (1, 0) too
            p.add_(0.2 * torch.randn_like(p))
        m.out.bias[int(sys.argv[5])] += float(sys.argv[7])  # so that some outputs stop
    m.save(path, int(sys.argv[5]), int(sys.argv[6]))
    sys.exit(0)

m = TransformerTranslator.load(path).double()
c = m.c
sources = json.load(sys.stdin)
b, s = len(sources), max(len(x) for x in sources)
src = torch.full((s, b), c["pad_id"], dtype=torch.long)
pad = torch.ones(b, s, dtype=torch.bool)
for r, x in enumerate(sources):
    src[: len(x), r] = torch.tensor(x)
    pad[r, : len(x)] = False
tgt = torch.full((1, b), c["bos_id"], dtype=torch.long)
with torch.no_grad():
    for _ in range(c["max_steps"]):
        y = m(src, pad, tgt)[-1].argmax(-1)  # ties: the lowest index, as lenspec
        tgt = torch.cat([tgt, y[None]])
    logits = m(src, pad, tgt[:-1])
rows = []
for r in range(b):
    toks, steps = [], []
    for t in range(c["max_steps"]):
        steps.append(logits[t, r].tolist())
        y = int(tgt[t + 1, r])
        if y == c["eos_id"]:
            break
        toks.append(y)
    rows.append({"tokens": toks, "logits": steps})
print(json.dumps(rows))
