//go:build babcmp

package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/spec"
)

type countCtx struct {
	context.Context
	n *int
}

func (c countCtx) Err() error {
	*c.n--
	if *c.n < 0 {
		return context.Canceled
	}
	return nil
}

func TestBaBCompare(t *testing.T) {
	root := "/work/main"
	imgs, _ := filepath.Glob("/work/runs/imgs/*.png")
	out, _ := os.Create(os.Getenv("BABCMP_OUT"))
	lines := 0
	defer out.Close()
	for _, m := range []string{"mmnist-rnn-rs", "mmnist-rnn"} {
		d, err := model.Load[float64](filepath.Join(root, "models", m))
		if err != nil {
			t.Fatal(err)
		}
		net, err := Lower(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs[:8] {
			x, err := multimnist.ReadPNG(img, 28, 112, -1, 1)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := model.Decode(context.Background(), d, model.Batch[float64]{X: x}, 20)
			K := len(res[0].Tokens) - 1
			epsList := []float64{0.02, 0.05, 0.1}
			if os.Getenv("BABCMP_ONE") != "" {
				epsList = []float64{0.05}
			}
			for _, eps := range epsList {
				ball, _ := spec.NewBall(x, eps, -1, 1)
				lo, hi := ball.Box()
				g := newGraph(net, K)
				t0 := time.Now()
				b := computeBounds(context.Background(), g, lo, hi, BoundCROWN)
				line := fmt.Sprintf("%s %s eps %g K %d crown %v proven %v", m, filepath.Base(img), eps, K, b.MarginBound(), b.Proven)
				if !b.Proven {
					b = computeSplitBounds(context.Background(), g, lo, hi, BoundAlphaCROWNFull, nil, nil, b, g.alphaStart(b), false)
					line += fmt.Sprintf(" alpha %v proven %v unstable %d", b.MarginBound(), b.Proven, b.NumUnstable)
				}
				if !b.Proven {
					n := 400
					if os.Getenv("BABCMP_N") != "" {
						fmt.Sscan(os.Getenv("BABCMP_N"), &n)
					}
					s := g.newBaB(lo, hi, Options{Bounds: BoundCROWN}, []*domain{{splits: splitSet{}, b: b}}, func([]float64) (bool, error) { return false, nil })
					o, err := s.run(countCtx{context.Background(), &n})
					line += fmt.Sprintf(" bab status %d bound %v open %d domains %d err %v", o.status, o.bound, o.open, o.domains, err)
				}
				fmt.Fprintf(out, "%s\n", line)
				if lines++; lines == 16 || os.Getenv("BABCMP_ONE") != "" {
					return
				}
				fmt.Fprintf(os.Stderr, "%s secs %.2f\n", line, time.Since(t0).Seconds())
			}
		}
	}
}
