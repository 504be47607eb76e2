#!/usr/bin/python3
"""PyTorch peer of lenspec's translator benchmark (bilstm-attention-translator).

The translator of model/translator.go written as a PyTorch user would write
it: nn.Embedding, a bidirectional multi-layer nn.LSTM over packed sequences,
Bahdanau attention, an nn.LSTMCell decoder. Its parameter names are the
tensor names of lenspec's model.safetensors, so the weights load with
load_state_dict(strict=True). One thread, eval() mode (the model has no
dropout here), no_grad for decoding.

lenspec starts this script, writes the inputs to a safetensors file and
sends one command per line on stdin; each answer is one JSON line on
stdout ({"error": "..."} on failure). Commands:

  load MODEL_DIR INPUTS_FILE   read config.json, model.safetensors and the inputs
  time OP REPS [WARMUP]        run OP WARMUP times (default 1) to warm up,
                               then REPS times; answer {"seconds": [...]}
                               (one per timed run)
  tokens                       {"tokens": [[...], ...]}: for every row of "src",
                               the tokens translate emits before eos (eos
                               excluded; the cap's worth if no eos came)
  loss                         {"loss": x}: the teacher-forced loss of the
                               train batch at the current weights (no step)
  quit

OP is translate (greedy decoding of every row of "src", in batches of 256
consecutive rows, each batch until every row emitted eos or the step cap)
or nmt-train-step (one teacher-forced cross-entropy step with Adam on the
train batch; the weights change, as in lenspec's benchmark).

Inputs file: a safetensors file with exactly these tensors (integer
tensors I32, little-endian; I64 is accepted too):

  src            I32 [N, S]  source token ids, row i = source sentence i:
                             positions 0..src_len[i]-1 hold its ids (no <s>,
                             no </s>), positions src_len[i]..S-1 hold pad_id.
                             S = max(src_len), N >= 1.
  src_len        I32 [N]     each row's length, 1 <= src_len[i] <= max_source_len
  train_src      I32 [B, Sb] the training batch's sources, laid out as src
  train_src_len  I32 [B]     their lengths
  train_tgt      I32 [B, T]  the training batch's target (label) ids, without
                             <s> and without </s>: row i holds its label tokens
                             in positions 0..len_i-1 and -1 in the rest;
                             len_i may be 0, T = max(1, max len_i). No label
                             token is eos_id.
  settings       F32 [2]     [step cap for translate (an integer, >= 1),
                              Adam learning rate for nmt-train-step]

The training step's loss is lenspec's model.TeacherForcedLoss: at step i
the decoder reads the previous label token (<s> first) and is scored
against label token i, then against eos after the last one; the
cross-entropy is summed over each row's len_i + 1 targets and averaged over
the B rows. Adam is torch.optim.Adam (beta 0.9/0.999, eps 1e-8, no weight
decay, no clipping).

It reads safetensors itself (Debian has no safetensors module) and needs
only torch and numpy. It is a reference to measure against, never a
dependency of lenspec.
"""
import json

import torch
import torch.nn as nn

from peerproto import read_safetensors, serve
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.set_num_threads(1)
torch.set_num_interop_threads(1)

BATCH = 256  # translate's batch size, as lenspec's decoding chunks



class Encoder(nn.Module):
    def __init__(self, vocab, emb, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, num_layers=layers, bidirectional=True, batch_first=True)

    def forward(self, src, lengths):
        """src [B, S] padded, lengths [B] (CPU int64) -> memory [B, S, 2H]
        (zero past each row's end) and [→h_n; ←h_1] of the last layer [B, 2H]."""
        packed = pack_padded_sequence(self.embedding(src), lengths, batch_first=True, enforce_sorted=False)
        out, (h, _) = self.rnn(packed)
        mem, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return mem, torch.cat([h[-2], h[-1]], 1)  # h: [layers·2, B, H], unsorted back to input order


class Attention(nn.Module):
    """Bahdanau's additive attention: e_t = vᵀ tanh(W_k m_t + b_k + W_q s)."""

    def __init__(self, mem_size, query_size, size):
        super().__init__()
        self.key = nn.Linear(mem_size, size)
        self.query = nn.Linear(query_size, size, bias=False)
        self.v = nn.Linear(size, 1, bias=False)

    def forward(self, s, mem, keys, mask):
        """s [B, D], mem [B, S, 2H], keys = key(mem) [B, S, A], mask [B, S]
        (True at real positions) -> context [B, 2H]."""
        e = self.v(torch.tanh(keys + self.query(s).unsqueeze(1))).squeeze(2)
        alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), 1)
        return torch.bmm(alpha.unsqueeze(1), mem).squeeze(1)


class Decoder(nn.Module):
    def __init__(self, vocab, emb, mem_size, hidden, attention, combine):
        super().__init__()
        self.bridge = nn.Linear(mem_size, hidden)
        self.embedding = nn.Embedding(vocab, emb)
        self.attention = Attention(mem_size, hidden, attention)
        self.cell = nn.LSTMCell(emb + mem_size, hidden)
        self.combine = nn.Linear(hidden + mem_size, combine)
        self.out = nn.Linear(combine, vocab)

    def start(self, last):
        s = torch.tanh(self.bridge(last))
        return s, torch.zeros_like(s)

    def step(self, e, state, mem, keys, mask):
        """e: embeddings of the previous tokens [B, E] -> logits [B, V], state."""
        ctx = self.attention(state[0], mem, keys, mask)
        h, c = self.cell(torch.cat([e, ctx], 1), state)
        return self.out(torch.tanh(self.combine(torch.cat([h, ctx], 1)))), (h, c)


class Translator(nn.Module):
    """lenspec's bilstm-attention-translator (docs/models.md)."""

    def __init__(self, cfg):
        super().__init__()
        self.vocab, self.bos, self.eos = cfg["vocab_size"], cfg["bos_id"], cfg["eos_id"]
        self.max_steps, self.max_source_len = cfg["max_steps"], cfg["max_source_len"]
        e, h, d = cfg["embedding_size"], cfg["encoder_hidden"], cfg["decoder_hidden"]
        self.encoder = Encoder(self.vocab, e, h, cfg["encoder_layers"])
        self.decoder = Decoder(self.vocab, e, 2 * h, d, cfg["attention_size"], cfg["combine_size"])

    def encode(self, src, lengths):
        """-> (memory, keys, mask, initial decoder state) for a padded batch."""
        mem, last = self.encoder(src, lengths)
        mask = torch.arange(src.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        return mem, self.decoder.attention.key(mem), mask, self.decoder.start(last)

    def forward(self, src, lengths, tgt_in):
        """Teacher forcing: tgt_in [B, T] are the decoder's inputs (<s> then
        the labels) -> logits [B, T, V]."""
        mem, keys, mask, state = self.encode(src, lengths)
        emb = self.decoder.embedding(tgt_in)
        logits = []
        for t in range(tgt_in.shape[1]):
            o, state = self.decoder.step(emb[:, t], state, mem, keys, mask)
            logits.append(o)
        return torch.stack(logits, 1)


def load_model(model_dir):
    with open(model_dir + "/config.json") as f:
        cfg = json.load(f)
    if cfg.get("architecture") != "bilstm-attention-translator":
        raise ValueError("%s is a %r, not a bilstm-attention-translator" % (model_dir, cfg.get("architecture")))
    m = Translator(cfg)
    m.load_state_dict(read_safetensors(model_dir + "/model.safetensors"), strict=True)
    return m.eval()


def trim(src, lengths):
    """The batch's own padding: columns up to its longest row (int64)."""
    lengths = lengths.long()
    return src[:, :int(lengths.max())].long(), lengths


def greedy(m, src, lengths, max_steps, on_step=None):
    """Batched greedy decoding: y_i = argmax o_i (ties: the lowest index),
    until every row emitted eos or max_steps steps. Returns each row's
    tokens before its eos. on_step(t, logits) sees every step's logits."""
    src, lengths = trim(src, lengths)
    mem, keys, mask, state = m.encode(src, lengths)
    b = src.shape[0]
    y = torch.full((b,), m.bos, dtype=torch.long)
    done = torch.zeros(b, dtype=torch.bool)
    ys = []
    for t in range(max_steps):
        o, state = m.decoder.step(m.decoder.embedding(y), state, mem, keys, mask)
        if on_step is not None:
            on_step(t, o)
        y = o.argmax(1)
        ys.append(y)
        done |= y == m.eos
        if bool(done.all()):
            break
    out = []
    for row in torch.stack(ys, 1).tolist():
        out.append(row[:row.index(m.eos)] if m.eos in row else row)
    return out


def teacher_forced_loss(m, src, lengths, tgt):
    """lenspec's model.TeacherForcedLoss: tgt [B, T] labels padded with -1;
    cross-entropy summed over each row's labels and its eos, mean over rows."""
    src, lengths = trim(src, lengths)
    tgt = tgt.long()
    b = tgt.shape[0]
    n = (tgt >= 0).sum(1)
    steps = int(n.max()) + 1
    tgt = torch.cat([tgt, torch.full((b, 1), -1, dtype=torch.long)], 1)[:, :steps]
    pos = torch.arange(steps).unsqueeze(0)
    target = torch.where(pos < n.unsqueeze(1), tgt, torch.full_like(tgt, -100))
    target = torch.where(pos == n.unsqueeze(1), torch.full_like(tgt, m.eos), target)
    tgt_in = torch.cat([torch.full((b, 1), m.bos, dtype=torch.long), target[:, :-1].clamp(min=0)], 1)
    logits = m(src, lengths, tgt_in)
    return F.cross_entropy(logits.reshape(-1, m.vocab), target.reshape(-1), ignore_index=-100, reduction="sum") / b


def train_step(m, opt, src, lengths, tgt):
    opt.zero_grad()
    loss = teacher_forced_loss(m, src, lengths, tgt)
    loss.backward()
    opt.step()
    return loss.item()


class Peer:
    def load(self, model_dir, inputs):
        self.m = load_model(model_dir)
        t = read_safetensors(inputs)
        self.src, self.src_len = t["src"].long(), t["src_len"].long()
        self.train_src, self.train_len = t["train_src"].long(), t["train_src_len"].long()
        self.train_tgt = t["train_tgt"].long()
        settings = t["settings"].tolist()
        self.steps, lr = int(settings[0]), float(settings[1])
        for name, x, n in (("src", self.src, self.src_len), ("train_src", self.train_src, self.train_len)):
            if x.dim() != 2 or n.shape != (x.shape[0],) or int(n.min()) < 1 or int(n.max()) > min(x.shape[1], self.m.max_source_len):
                raise ValueError("%s %s with lengths %s: bad shape or length" % (name, tuple(x.shape), tuple(n.shape)))
            if int(x.min()) < 0 or int(x.max()) >= self.m.vocab:
                raise ValueError("%s holds a token outside the vocabulary" % name)
        if self.train_tgt.shape[0] != self.train_src.shape[0]:
            raise ValueError("train_tgt has %d rows, train_src %d" % (self.train_tgt.shape[0], self.train_src.shape[0]))
        self.opt = torch.optim.Adam(self.m.parameters(), lr=lr)

    def translate(self):
        with torch.no_grad():
            return [greedy(self.m, self.src[i:i + BATCH], self.src_len[i:i + BATCH], self.steps)
                    for i in range(0, self.src.shape[0], BATCH)]

    def tokens(self):
        return [row for batch in self.translate() for row in batch]

    def loss(self):
        with torch.no_grad():
            return teacher_forced_loss(self.m, self.train_src, self.train_len, self.train_tgt).item()

    def train_step(self):
        return train_step(self.m, self.opt, self.train_src, self.train_len, self.train_tgt)


def main():
    peer = Peer()
    serve(peer, {"translate": peer.translate, "nmt-train-step": peer.train_step})


if __name__ == "__main__":
    main()
