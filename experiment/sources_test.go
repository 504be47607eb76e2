package experiment

import (
	"context"
	"strings"
	"testing"

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
