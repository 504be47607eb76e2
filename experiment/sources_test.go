package experiment

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/captions"
	"github.com/lenspec/lenspec/mnist"
	"github.com/lenspec/lenspec/model"
	"github.com/lenspec/lenspec/multimnist"
)

func TestSourcesImageData(t *testing.T) {
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{MNISTDir: dir}
	mm := model.InputSpec{Kind: model.Continuous, Shape: []int{1, multimnist.Height, multimnist.Width}, Min: -1, Max: 1}
	for _, tc := range []struct {
		name  string
		in    model.InputSpec
		split string
		want  string
	}{
		{"bad split", mm, "dev", `split "dev": want train or test`},
		{"no data set", model.InputSpec{Kind: model.Continuous, Shape: []int{1, 5, 5}}, "test", "Multi-MNIST data are"},
	} {
		if _, err := src.ImageData(context.Background(), tc.in, 1, tc.split); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	data, err := src.ImageData(context.Background(), mm, 1, "test")
	if err != nil {
		t.Fatal(err)
	}
	if data.Ref != (DataRef{Name: "multimnist", Split: "test", Seed: 1}) || data.Source.Len() != multimnist.DefaultTest {
		t.Errorf("got %+v with %d samples, want the Multi-MNIST test split of %d", data.Ref, data.Source.Len(), multimnist.DefaultTest)
	}
	// The same seed gives the same canvases as building the split directly.
	_, te, err := src.MultiMNIST(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := MultiMNIST(te, "test", 1, mm)
	if err != nil {
		t.Fatal(err)
	}
	x, _, _ := data.Source.Batch([]int{0, 7}, nil)
	y, _, _ := want.Source.Batch([]int{0, 7}, nil)
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("canvas value %d: %v, want %v", i, x[i], y[i])
		}
	}
}

// TestCaptionTraining: the training split has the lengths asked for, the
// test split is the skewed one whatever they are; other lengths are
// refused.
func TestCaptionTraining(t *testing.T) {
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{MNISTDir: dir}
	in := model.InputSpec{Kind: model.Continuous, Shape: []int{1, captions.Height, captions.Width}, Min: -1, Max: 1}
	ctx := context.Background()
	flatTr, flatTe, err := src.CaptionTraining(ctx, 1, "flat", in)
	if err != nil {
		t.Fatal(err)
	}
	skTr, skTe, err := src.CaptionTraining(ctx, 1, "skewed", in)
	if err != nil {
		t.Fatal(err)
	}
	_, te, err := src.Captions(ctx, 1, captions.Skewed())
	if err != nil {
		t.Fatal(err)
	}
	if flatTe.Len() != te.N || skTe.Len() != te.N || flatTr.Len() != skTr.Len() {
		t.Errorf("splits of %d, %d (test %d), %d and %d", flatTe.Len(), skTe.Len(), te.N, flatTr.Len(), skTr.Len())
	}
	a, _, la := flatTe.Batch([]int{0, 1, 2}, nil)
	b, _, lb := skTe.Batch([]int{0, 1, 2}, nil)
	if fmt.Sprint(a) != fmt.Sprint(b) || fmt.Sprint(la) != fmt.Sprint(lb) {
		t.Errorf("test captions differ with the training lengths: %v vs %v", la, lb)
	}
	if _, _, err := src.CaptionTraining(ctx, 1, "long", in); err == nil {
		t.Error("lengths \"long\" accepted")
	}
}

// TestCaptionerTraining: the captioner trains on the training split
// (shifted only when asked) and is evaluated on it unshifted and on the
// test split, the canvases those of the splits built directly.
func TestCaptionerTraining(t *testing.T) {
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{MNISTDir: dir}
	in := model.InputSpec{Kind: model.Continuous, Shape: []int{1, multimnist.Height, multimnist.Width}, Min: -1, Max: 1}
	ctx := context.Background()
	tr, trEval, te, err := src.CaptionerTraining(ctx, 1, true, in)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Shift || trEval.Shift || te.Shift {
		t.Fatalf("shift: training %v, its evaluation %v, test %v; want only training", tr.Shift, trEval.Shift, te.Shift)
	}
	if tr.Data != trEval.Data || tr.Len() != multimnist.DefaultTrain || te.Len() != multimnist.DefaultTest {
		t.Fatalf("lengths %d, %d, %d: want the training split twice and the test split", tr.Len(), trEval.Len(), te.Len())
	}
	if tr.Lo != in.Min || tr.Hi != in.Max || te.Lo != in.Min || te.Hi != in.Max {
		t.Fatalf("ranges [%v, %v] and [%v, %v], want the model's [%v, %v]", tr.Lo, tr.Hi, te.Lo, te.Hi, in.Min, in.Max)
	}
	mtr, mte, err := src.MultiMNIST(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *multimnist.Source[float32]
		want *multimnist.Dataset
	}{{"training", trEval, mtr}, {"test", te, mte}} {
		direct, err := multimnist.NewSource[float32](c.want, in.Min, in.Max, false)
		if err != nil {
			t.Fatal(err)
		}
		x, _, lx := c.got.Batch([]int{0, 9}, nil)
		y, _, ly := direct.Batch([]int{0, 9}, nil)
		if fmt.Sprint(lx) != fmt.Sprint(ly) {
			t.Fatalf("%s labels %v, want %v", c.name, lx, ly)
		}
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("%s canvas value %d: %v, want %v", c.name, i, x[i], y[i])
			}
		}
	}
}

// TestCaptionSplit: the split named of the captions data set with the
// lengths named, as Captions builds it; other lengths and splits refused.
func TestCaptionSplit(t *testing.T) {
	dir, err := mnist.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	src := Sources{MNISTDir: dir}
	ctx := context.Background()
	tr, te, err := src.Captions(ctx, 2, captions.Flat())
	if err != nil {
		t.Fatal(err)
	}
	for split, want := range map[string]*captions.Dataset{"train": tr, "test": te} {
		got, err := src.CaptionSplit(ctx, 2, "flat", split)
		if err != nil {
			t.Fatal(err)
		}
		if got.N != want.N || fmt.Sprint(got.LengthHistogram()) != fmt.Sprint(want.LengthHistogram()) || fmt.Sprint(got.Tokens[5]) != fmt.Sprint(want.Tokens[5]) {
			t.Errorf("%s: %d canvases, lengths %v; want %d, %v", split, got.N, got.LengthHistogram(), want.N, want.LengthHistogram())
		}
	}
	for _, bad := range [][2]string{{"long", "test"}, {"flat", "dev"}} {
		if _, err := src.CaptionSplit(ctx, 2, bad[0], bad[1]); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
