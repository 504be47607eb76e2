package attack

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lenspec/lenspec/internal/testmodels"
	"github.com/lenspec/lenspec/model"
)

// naiveWorst decodes every one-substitution neighbour of x alone, in
// order, and returns the longest output (ties: the first) and, for each
// K̂ in ks, the first neighbour longer than K̂ (position −1: none).
type naiveOutcome struct {
	pos, tok, length int
	firstOver        map[int][2]int
}

func naiveWorst(t *testing.T, d model.Decoder[float64], x []int, steps int, ks []int) naiveOutcome {
	t.Helper()
	spec := d.Input()
	out := naiveOutcome{pos: -1, length: -1, firstOver: map[int][2]int{}}
	for _, k := range ks {
		out.firstOver[k] = [2]int{-1, -1}
	}
	for p := range x {
		for tok := range spec.Vocab {
			if tok == x[p] || slices.Contains(spec.Special, tok) {
				continue
			}
			src := slices.Clone(x)
			src[p] = tok
			res, err := model.Decode(context.Background(), d, model.Batch[float64]{Tokens: [][]int{src}}, steps)
			if err != nil {
				t.Fatal(err)
			}
			l := len(res[0].Tokens)
			if l > out.length {
				out.pos, out.tok, out.length = p, tok, l
			}
			for _, k := range ks {
				if l > k && out.firstOver[k][0] < 0 {
					out.firstOver[k] = [2]int{p, tok}
				}
			}
		}
	}
	return out
}

// stoppingTranslator is the tests' random translator in float64 (so that
// a row's result does not depend on the rows decoded beside it), its eos
// logit raised by bias: the random weights alone loop on every input; at
// 5 some one-substitution neighbours reach a 40-step cap, at 7 almost
// none do and the longest outputs are short.
func stoppingTranslator(t *testing.T, bias float64) model.Decoder[float64] {
	t.Helper()
	d32, err := testmodels.Translator(8)
	if err != nil {
		t.Fatal(err)
	}
	d, err := model.Cast[float64](d32)
	if err != nil {
		t.Fatal(err)
	}
	d.(*model.Translator[float64]).Out.B.W.Data[d.EOS()] += bias
	return d
}

func TestExhaustSubstitutionsMatchesNaiveSearch(t *testing.T) {
	const steps = 40
	for _, tc := range []struct {
		bias float64
		text string
	}{{5, "das haus ist klein"}, {5, "der hund"}, {7, "das haus ist klein"}, {7, "die katze"}} {
		d := stoppingTranslator(t, tc.bias)
		x := model.EncodeText(d.Config().Tokenizer, model.TokenizerText(tc.text))
		t.Run(fmt.Sprintf("%v %s", tc.bias, tc.text), func(t *testing.T) {
			base, err := ExhaustSubstitutions(context.Background(), d, x, ExhaustOptions{MaxLen: -1, MaxSteps: steps})
			if err != nil {
				t.Fatal(err)
			}
			// Both regimes are covered: an exhaustion, and a stop at the cap.
			if capped := base.Length == steps; capped != (tc.bias == 5) || capped != (base.Pruned > 0) {
				t.Fatalf("longest output %d of cap %d, %d candidates pruned", base.Length, steps, base.Pruned)
			}
			ks := []int{0, base.Length - 1, base.Length, base.Length + 5}
			want := naiveWorst(t, d, x, steps, ks)
			if base.Position != want.pos || base.Token != want.tok || base.Length != want.length {
				t.Fatalf("bound: substitution (%d, %d) length %d, naive search (%d, %d) length %d",
					base.Position, base.Token, base.Length, want.pos, want.tok, want.length)
			}
			w := slices.Clone(x)
			w[want.pos] = want.tok
			if !slices.Equal(base.Witness, w) || len(base.Output) != base.Length {
				t.Errorf("witness %v output %v, want %v of length %d", base.Witness, base.Output, w, base.Length)
			}
			n := d.Input().Vocab - len(d.Input().Special)
			if base.Candidates != len(x)*(n-1) || base.Decoded+base.Pruned != base.Candidates {
				t.Errorf("candidates %d decoded %d pruned %d, want %d in all", base.Candidates, base.Decoded, base.Pruned, len(x)*(n-1))
			}
			for _, k := range ks {
				if k < 0 || k >= steps {
					continue
				}
				v, err := ExhaustSubstitutions(context.Background(), d, x, ExhaustOptions{MaxLen: k})
				if err != nil {
					t.Fatal(err)
				}
				if v.Vulnerable != (base.Length > k) || v.Robust == v.Vulnerable {
					t.Errorf("K̂ %d: vulnerable %v robust %v, longest output %d", k, v.Vulnerable, v.Robust, base.Length)
				}
				if f := want.firstOver[k]; v.Position != f[0] || v.Token != f[1] {
					t.Errorf("K̂ %d: witness (%d, %d), first candidate longer: (%d, %d)", k, v.Position, v.Token, f[0], f[1])
				}
				if v.Vulnerable && (v.Length != k+1 || v.Decoded >= base.Candidates && v.Pruned != 0) {
					t.Errorf("K̂ %d: witness length %d, decoded %d pruned %d", k, v.Length, v.Decoded, v.Pruned)
				}
				if v.Robust && v.Decoded != base.Decoded {
					t.Errorf("K̂ %d: robust after %d decodes, bound decoded %d", k, v.Decoded, base.Decoded)
				}
			}
		})
	}
}

// A token whose embedding equals another's gives the same encoder input:
// it is pruned, once per position, and the outcome does not change.
func TestExhaustSubstitutionsPrunesDuplicateEmbeddings(t *testing.T) {
	d := stoppingTranslator(t, 7)
	x := model.EncodeText(d.Config().Tokenizer, model.TokenizerText("das haus ist klein"))
	before, err := ExhaustSubstitutions(context.Background(), d, x, ExhaustOptions{MaxLen: -1, MaxSteps: 40})
	if err != nil {
		t.Fatal(err)
	}
	w := d.(sourceEmbedder[float64]).SourceEmbedding().W
	dim := len(w.Data) / d.Input().Vocab
	a, b := 100, 200 // both above the specials and absent from x
	copy(w.Data[b*dim:(b+1)*dim], w.Data[a*dim:(a+1)*dim])
	after, err := ExhaustSubstitutions(context.Background(), d, x, ExhaustOptions{MaxLen: -1, MaxSteps: 40})
	if err != nil {
		t.Fatal(err)
	}
	if after.Decoded != before.Decoded-len(x) || after.Pruned != before.Pruned+len(x) {
		t.Errorf("decoded %d pruned %d, want %d and %d", after.Decoded, after.Pruned, before.Decoded-len(x), before.Pruned+len(x))
	}
	want := naiveWorst(t, d, x, 40, nil)
	if after.Position != want.pos || after.Token != want.tok || after.Length != want.length {
		t.Errorf("substitution (%d, %d) length %d, naive search (%d, %d) length %d", after.Position, after.Token, after.Length, want.pos, want.tok, want.length)
	}
}
