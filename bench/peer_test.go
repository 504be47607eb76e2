package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lenspec/lenspec/ad"
	"github.com/lenspec/lenspec/bpe"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/safetensors"
)

// TestMain doubles as a stand-in for the PyTorch peer: with
// LENSPEC_FAKE_PEER set, the test binary speaks bench/peer.py's protocol,
// decoding with lenspec itself ("corrupt": with one output changed), so
// that the Go side of the peer benchmark is tested without PyTorch.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LENSPEC_FAKE_PEER"); mode != "" {
		fakePeer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakePeer(mode string) {
	var d model.Decoder[float32]
	var x []float32
	var srcs, trainSrc, trainTgt [][]int
	steps := 0
	ints := func(f *safetensors.File, name string, pad bool) [][]int {
		t, _ := f.Tensor(name)
		l, _ := f.Tensor(name + "_len")
		v, _ := t.Int32s()
		var lens []int32
		if l != nil {
			lens, _ = l.Int32s()
		}
		var out [][]int
		for i := 0; i < t.Shape[0]; i++ {
			var row []int
			for j := 0; j < t.Shape[1]; j++ {
				id := int(v[i*t.Shape[1]+j])
				if (pad && j >= int(lens[i])) || (!pad && id < 0) {
					break
				}
				row = append(row, id)
			}
			out = append(out, row)
		}
		return out
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd := strings.Fields(in.Text())
		if len(cmd) == 0 {
			continue
		}
		var ans any
		switch cmd[0] {
		case "load":
			var err error
			if d, err = model.Load[float32](cmd[1]); err != nil {
				ans = map[string]string{"error": err.Error()}
				break
			}
			f, err := safetensors.ReadFile(cmd[2])
			if err != nil {
				ans = map[string]string{"error": err.Error()}
				break
			}
			if t, ok := f.Tensor("decode"); ok {
				x, _ = t.Float32s()
			} else {
				srcs, trainSrc, trainTgt = ints(f, "src", true), ints(f, "train_src", true), ints(f, "train_tgt", false)
			}
			s, _ := f.Tensor("settings")
			set, _ := s.Float64s()
			steps = int(set[0])
			ans = map[string]any{"ok": true, "torch": "fake"}
		case "loss":
			tp := ad.NewTape[float32](false)
			l, err := model.TeacherForcedLoss(tp, d, model.Input[float32]{Tokens: trainSrc}, trainTgt)
			if err != nil {
				ans = map[string]string{"error": err.Error()}
				break
			}
			ans = map[string]any{"loss": float64(l.Value.Data[0])}
		case "tokens":
			b := model.Batch[float32]{X: x}
			if srcs != nil {
				b = model.Batch[float32]{Tokens: srcs}
			}
			res, err := model.Decode(context.Background(), d, b, steps)
			if err != nil {
				ans = map[string]string{"error": err.Error()}
				break
			}
			toks := make([][]int, len(res))
			for i, r := range res {
				toks[i] = r.Tokens
			}
			if mode == "corrupt" {
				toks[1] = append(toks[1], (d.EOS()+1)%d.Vocab())
			}
			ans = map[string]any{"tokens": toks}
		case "time":
			// lenspec says how many warm-ups it wants: none for a single
			// run (the operation's first call is the warm-up, and a round
			// of one run needs none), one before a round of several.
			var reps int
			fmt.Sscan(cmd[2], &reps)
			if want := map[bool]string{false: "0", true: "1"}[reps > 1]; len(cmd) != 4 || cmd[3] != want {
				ans = map[string]string{"error": fmt.Sprintf("want time OP REPS %s, got %q", want, strings.Join(cmd, " "))}
				break
			}
			ts := make([]float64, reps)
			for i := range ts {
				ts[i] = 0.001
			}
			ans = map[string]any{"seconds": ts}
		case "quit":
			return
		default:
			ans = map[string]string{"error": "unknown command " + cmd[0]}
		}
		b, _ := json.Marshal(ans)
		fmt.Println(string(b))
	}
}

// TestPeer runs the peer benchmark against the stand-in peer: every
// operation is timed on both sides and reported as a ratio; and a peer
// that decodes other tokens than lenspec, away from ties, is refused as
// unequal work.
func TestPeer(t *testing.T) {
	cfg := model.DefaultCaptionerConfig()
	d, err := model.New[float32](&cfg, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	in := d.Input()
	rng := rand.New(rand.NewPCG(1, 2))
	canvases := func(n int) []float32 {
		x := make([]float32, n*in.Size())
		for i := range x {
			x[i] = float32(in.Min + (in.Max-in.Min)*rng.Float64())
		}
		return x
	}
	data := PeerData{Decode: canvases(20), Train: canvases(4), TrainLabels: [][]int{{1}, {2, 3}, {4}, {5, 6, 7}}, PGD: canvases(3)}
	opt := DefaultPeerOptions()
	// Tolerance 0: every operation runs the most rounds; a round time of 0
	// makes one run per side and round.
	opt.Python, opt.Script, opt.Model, opt.DecodeSteps = os.Args[0], "peer.py", dir, 5
	opt.Rounds, opt.MinRounds, opt.Tolerance, opt.RoundTime = 3, 2, 0, 0

	t.Setenv("LENSPEC_FAKE_PEER", "same")
	rep, err := Peer(context.Background(), d, data, opt)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PyTorch.Version != "fake" || rep.Compared != 20 || rep.Differ != 0 || len(rep.Ops) != 3 {
		t.Fatalf("report %+v", rep)
	}
	// The run says what it ran on, and each operation is a record that
	// says it too.
	if m := rep.Machine; m.Cores < 1 || m.Kernels != ad.KernelLevel() || m.BLAS != ad.BLASName() || m.ISA != ad.ISANative || m.Start == "" {
		t.Fatalf("machine %+v", m)
	}
	recs := rep.Records(dir)
	if len(recs) != 3 {
		t.Fatalf("%d records for 3 operations", len(recs))
	}
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"time", "op", "cpu", "cpu_isa", "cores", "isa", "kernels", "blas", "blas_threads", "load_before", "load_after", "loaded", "peer", "pytorch", "lenspec_threads"} {
			if _, ok := back[k]; !ok {
				t.Fatalf("record %d lacks %q: %s", i, k, b)
			}
		}
		if r.Op != rep.Ops[i].Name || r.Peer.Ratio != rep.Ops[i].Ratio || r.Model != dir {
			t.Fatalf("record %d: %s", i, b)
		}
	}
	for i, name := range []string{"decode", "train-step", "pgd"} {
		o := rep.Ops[i]
		// The fake peer's runs take 0.001 s: each round's ratio is
		// lenspec's one run over that.
		if o.Name != name || o.Torch != 0.001 || !(o.Lenspec1 > 0) || !(o.LenspecN > 0) || o.Rounds != 3 || o.Runs != 3 || o.Stop != StopCap ||
			len(o.RoundRatios) != 3 || o.Ratio != midMedian(o.RoundRatios) || o.RatioLo != 0 || o.RatioHi != 0 {
			t.Fatalf("op %d: %+v", i, o)
		}
		if math.Abs(o.Ratio-o.Lenspec1/o.Torch) > 1e-9*o.Ratio {
			t.Fatalf("op %d: one run per round, so the median ratio is the median time's: %v vs %v", i, o.Ratio, o.Lenspec1/o.Torch)
		}
	}

	// A tolerance no interval misses stops each operation at the fewest
	// rounds that give an interval, and reports it; a round time no run
	// fills makes the most runs per round.
	opt.Rounds, opt.MinRounds, opt.Tolerance, opt.RoundTime, opt.Reps = 15, 5, 1e9, time.Hour, 3
	rep, err = Peer(context.Background(), d, data, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Ops {
		if o.Rounds != 5 || o.Runs != 15 || o.Stop != StopConverged || !(o.RatioLo > 0 && o.RatioLo <= o.Ratio && o.Ratio <= o.RatioHi) {
			t.Fatalf("op %+v", o)
		}
	}

	opt.Rounds, opt.MinRounds = 2, 3
	if _, err := Peer(context.Background(), d, data, opt); err == nil || !strings.Contains(err.Error(), "minimum rounds") {
		t.Fatalf("minimum rounds past the most: error %v", err)
	}
	opt.Rounds, opt.MinRounds = 3, 2

	t.Setenv("LENSPEC_FAKE_PEER", "corrupt")
	if _, err := Peer(context.Background(), d, data, opt); err == nil || !strings.Contains(err.Error(), "not equal work") {
		t.Fatalf("a peer decoding other tokens: error %v", err)
	}
}

// TestPeerTranslator: the translator's half against the stand-in peer:
// sources and the training batch written in peer_nmt.py's format and read
// back, the same tokens and training loss, both operations timed.
func TestPeerTranslator(t *testing.T) {
	tok, err := bpe.Train([]string{"das haus ist klein", "the house is small", "ein kleines haus", "a small house"}, bpe.TrainOptions{VocabSize: 300, MinFrequency: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.DefaultTranslatorConfig(tok.Size(), bpe.PadID, bpe.BOSID, bpe.EOSID, bpe.UnkID)
	a := cfg.Arch.(*model.TranslatorConfig)
	a.Embedding, a.EncoderHidden, a.DecoderHidden, a.Attention, a.Combine = 8, 6, 10, 8, 8
	cfg.Tokenizer, cfg.MaxSteps = tok, 12
	d, err := model.New[float32](&cfg, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := model.Save(dir, d); err != nil {
		t.Fatal(err)
	}
	data := PeerData{
		Sources:      [][]int{tok.Encode("das haus"), tok.Encode("ein kleines haus ist klein"), tok.Encode("klein")},
		TrainSources: [][]int{tok.Encode("das haus ist klein"), tok.Encode("ein haus")},
		TrainLabels:  [][]int{tok.Encode("the house is small"), {}},
	}
	opt := DefaultPeerOptions()
	opt.Python, opt.Script, opt.Model, opt.Rounds, opt.MinRounds, opt.RoundTime = os.Args[0], "peer_nmt.py", dir, 1, 1, 0
	t.Setenv("LENSPEC_FAKE_PEER", "same")
	rep, err := Peer(context.Background(), d, data, opt)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Compared != 3 || rep.Differ != 0 || len(rep.Ops) != 2 || rep.Ops[0].Name != "translate" || rep.Ops[1].Name != "nmt-train-step" {
		t.Fatalf("report %+v", rep)
	}
	if math.Abs(rep.Loss-rep.TorchLoss) > 1e-5*rep.Loss || !(rep.Loss > 0) {
		t.Fatalf("losses %v (lenspec) and %v (peer)", rep.Loss, rep.TorchLoss)
	}
	t.Setenv("LENSPEC_FAKE_PEER", "corrupt")
	if _, err := Peer(context.Background(), d, data, opt); err == nil || !strings.Contains(err.Error(), "not equal work") {
		t.Fatalf("a peer decoding other tokens: error %v", err)
	}
}
