package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/verify"
)

// TestSummarise checks a method's summary: the path's own token is no
// margin, a tie counts as at least as tight, the gain is auto_LiRPA's
// bound minus lenspec's, and the ratio is of the times summed.
func TestSummarise(t *testing.T) {
	inputs := []VerifyPeerInput{{Index: 4, Path: []int{1, 2}}, {Index: 9, Path: []int{0}}}
	bounds := []VerifyPeerBound{
		{Input: 4, Method: "crown", Lenspec: [][]float64{{-1, 0, -3}, {-2, 5, 0}}, LiRPA: [][]float64{{-1, 7, -2}, {-2.5, 4, 0}}, LenspecSeconds: 1, LiRPASeconds: 4},
		{Input: 9, Method: "crown", Lenspec: [][]float64{{0, -1, -1}}, LiRPA: [][]float64{{9, -0.5, -1}}, LenspecSeconds: 1, LiRPASeconds: 4},
		{Input: 9, Method: "ibp", Lenspec: [][]float64{{0, 100, 100}}, LiRPA: [][]float64{{0, 0, 0}}, LenspecSeconds: 7, LiRPASeconds: 1},
	}
	for _, tc := range []struct {
		method                  string
		margins, tighter        int
		mean, worst, ratio, shr float64
	}{
		// crown: gains 0, 1 (step 0 of input 4); −0.5, −1 (step 1);
		// 0.5, 0 (input 9): 4 of 6 at least as tight.
		{"crown", 6, 4, 0, -1, 0.25, 4.0 / 6},
		{"ibp", 2, 0, -100, -100, 7, 0},
		{"alpha-crown", 0, 0, 0, 0, 0, 0},
	} {
		t.Run(tc.method, func(t *testing.T) {
			s := summarise(tc.method, inputs, bounds)
			if s.Margins != tc.margins || s.Tighter != tc.tighter || math.Abs(s.MeanGain-tc.mean) > 1e-12 ||
				s.WorstGain != tc.worst || s.Ratio != tc.ratio || math.Abs(s.Share()-tc.shr) > 1e-12 {
				t.Fatalf("summary %+v (share %g), want %d margins, %d tighter, mean %g, worst %g, ratio %g, share %g",
					s, s.Share(), tc.margins, tc.tighter, tc.mean, tc.worst, tc.ratio, tc.shr)
			}
		})
	}
}

// fakeLiRPA is a stand-in for bench/peer_lirpa.py in sh: it answers load,
// and bound with bounds far looser than any of lenspec's for IBP, far
// tighter for CROWN, and what mode says for α-CROWN, two steps of four
// tokens each.
const fakeLiRPA = `while read -r cmd i m; do
  case "$cmd $m" in
  load*) echo '{"torch":"fake","lirpa":"0.0","blas":"none","threads":1}' ;;
  *" IBP") echo '{"upper":[[1e9,0,1e9,1e9],[1e9,1e9,1e9,0]],"seconds":0.5}' ;;
  *" CROWN") echo '{"upper":[[-1e9,0,-1e9,-1e9],[-1e9,-1e9,-1e9,0]],"seconds":0.25}' ;;
  *" alpha-CROWN") echo "$ALPHA" ;;
  quit*) exit 0 ;;
  *) echo '{"error":"unknown command"}' ;;
  esac
done
`

// TestVerifyPeer runs the verifier peer benchmark against the stand-in:
// lenspec's side bounds every input by every method, the peer's answers
// are read, summarised and printed with the ratio and tighter lines; an
// answer of the wrong shape and a peer's error are refused.
func TestVerifyPeer(t *testing.T) {
	cfg := model.DefaultCaptionerConfig()
	a := cfg.Arch.(*model.CaptionerConfig)
	a.Input = model.InputConfig{Channels: 1, Height: 4, Width: 6, Min: -1, Max: 1}
	a.Conv = []model.ConvConfig{{OutChannels: 2, Kernel: 3, Stride: 2, Padding: 1}}
	a.FCHidden, a.Embedding, a.Hidden = 6, 4, 5
	cfg.Vocab, cfg.EOS, cfg.MaxSteps = []string{"a", "b", "c", "<eos>"}, 3, 4
	d, err := model.NewCaptioner[float64](&cfg, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	net, err := verify.Lower(d)
	if err != nil {
		t.Fatal(err)
	}
	xs := [][]float64{make([]float64, 24), make([]float64, 24)}
	for i := range xs[1] {
		xs[1][i] = 0.995
	}
	inputs, err := VerifyPeerInputs(context.Background(), d, []int{7, 8}, xs, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	// The box is clipped to the input range; the path is the fake's.
	if got := inputs[1]; got.Lo[0] != float64(float32(0.985)) || got.Hi[0] != 1 || got.Index != 8 {
		t.Fatalf("input 8's box [%g, %g], index %d", got.Lo[0], got.Hi[0], got.Index)
	}
	for i := range inputs {
		inputs[i].Path = []int{1, 3}
	}
	script := filepath.Join(t.TempDir(), "peer.sh")
	if err := os.WriteFile(script, []byte(fakeLiRPA), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := DefaultVerifyPeerOptions()
	opt.Python, opt.Script, opt.Iters = "/bin/sh", script, 3

	t.Setenv("ALPHA", `{"upper":[[0,0,0,0],[0,0,0,0]],"seconds":0.125}`)
	rep, err := VerifyPeer(context.Background(), "models/tiny", net, inputs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bounds) != 6 || len(rep.Summary) != 3 || !strings.Contains(rep.Peer, "auto_LiRPA 0.0 on PyTorch fake") {
		t.Fatalf("report %+v", rep)
	}
	want := map[string][2]float64{"ibp": {1, 0.5}, "crown": {0, 0.25}}
	for _, s := range rep.Summary {
		if s.Margins != 12 {
			t.Errorf("%s: %d margins, want 12 (2 inputs × 2 steps × 3 tokens)", s.Method, s.Margins)
		}
		if w, ok := want[s.Method]; ok && (s.Share() != w[0] || s.LiRPASeconds != 2*w[1]) {
			t.Errorf("%s: share %g, auto_LiRPA %g s; want %g, %g s", s.Method, s.Share(), s.LiRPASeconds, w[0], 2*w[1])
		}
		if s.Ratio <= 0 || s.LenspecSeconds <= 0 {
			t.Errorf("%s: ratio %g of %g s", s.Method, s.Ratio, s.LenspecSeconds)
		}
	}
	var text strings.Builder
	rep.WriteText(&text)
	for _, l := range []string{"\nratio tiny/ibp ", "\nratio tiny/alpha-crown ", "\ntighter tiny/ibp 1.000 (12 of 12 margins", "\ntighter tiny/crown 0.000 (0 of 12 margins"} {
		if !strings.Contains(text.String(), l) {
			t.Errorf("report lacks %q:\n%s", l, text.String())
		}
	}

	for _, tc := range []struct{ answer, want string }{
		{`{"upper":[[0,0,0,0]],"seconds":1}`, "auto_LiRPA's alpha-CROWN bounds of input 7: 1 steps, want 2"},
		{`{"upper":[[0,0,0,0],[0,0,0]],"seconds":1}`, "3 tokens at step 1, want 4"},
		{`{"error":"RuntimeError: no"}`, "bound 0 alpha-CROWN: RuntimeError: no"},
	} {
		t.Setenv("ALPHA", tc.answer)
		if _, err := VerifyPeer(context.Background(), "models/tiny", net, inputs, opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("peer answering %s: error %v, want %q", tc.answer, err, tc.want)
		}
	}
}
