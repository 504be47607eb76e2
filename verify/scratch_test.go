package verify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
	"github.com/lenspec/lenspec/spec"
)

func TestScratch(t *testing.T) {
	d, _ := model.Load[float64]("/work/runs/lstm-rs")
	net, _ := Lower(d)
	x, _ := multimnist.ReadPNG("/work/runs/imgs/test-00001.png", 28, 112, -1, 1)
	for _, eps := range []float64{0.01, 0.02} {
		ball, _ := spec.NewBall(x, eps, -1, 1)
		lo, hi := ball.Box()
		g := newGraph(net, 3)
		t0 := time.Now()
		b := computeBounds(context.Background(), g, lo, hi, BoundCROWN)
		fmt.Printf("eps %g crown %.1fs margin %.3g unstable %d\n", eps, time.Since(t0).Seconds(), b.MarginBound(), b.NumUnstable)
		for id, v := range b.Val {
			n := g.nodes[id]
			if id == 0 || (n.step < 0 && id < g.enc-2) {
				continue
			}
			w, mx := 0.0, 0.0
			for _, iv := range v {
				w += iv.Hi - iv.Lo
				mx = max(mx, iv.Hi-iv.Lo)
			}
			if n.act != nil || n.step < 0 || n.name[len(n.name)-1] == 'c' || g.hidden[max(n.step, 0)] == id {
				fmt.Printf("   %-12s width mean %.4g max %.4g\n", n.name, w/float64(len(v)), mx)
			}
		}
		for s := range b.Margin {
			fmt.Printf("   step %d margin bound %.3g allowed %v\n", s, b.stepBound(s), b.Allowed[s])
		}
	}
}
