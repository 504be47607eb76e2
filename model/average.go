package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/lenspec/lenspec/ad"
)

// Average returns the weighted mean of models of one architecture and
// configuration (config.json equal but for its training record): each
// parameter is Σᵢ wᵢ·pᵢ / Σᵢ wᵢ, summed in float64. Between two
// fine-tunes of one model the loss changes smoothly along the straight
// line, so an average trades what each was trained for — a certified
// model's verifiability and a distilled fine-tune's accuracy — without
// another training run (weight averaging, Wortsman et al. 2022's model
// soups). Models trained apart from different starting points share no
// such path, and their average is usually a poor model: evaluate it.
//
// Weights are finite and non-negative with a positive sum. The result has
// the first model's configuration with no training record; its
// parameters are new, the inputs' are left alone.
func Average[T ad.Float](ds []Decoder[T], weights []float64) (Decoder[T], error) {
	if len(ds) == 0 {
		return nil, errors.New("average: no models")
	}
	weights, err := AverageWeights(weights, len(ds))
	if err != nil {
		return nil, fmt.Errorf("average: %w", err)
	}
	first, err := archJSON(ds[0].Config())
	if err != nil {
		return nil, fmt.Errorf("average: %w", err)
	}
	for i, d := range ds[1:] {
		other, err := archJSON(d.Config())
		if err != nil {
			return nil, fmt.Errorf("average: %w", err)
		}
		if !bytes.Equal(first, other) || !sameTokens(ds[0].Config(), d.Config()) {
			return nil, fmt.Errorf("average: model %d's configuration differs from model 1's (architecture, vocabulary or sizes): only models of one configuration average", i+2)
		}
	}
	cfg := *ds[0].Config()
	cfg.Training = nil
	out, err := New[T](&cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("average: %w", err)
	}
	// One configuration builds one parameter list: the j-th parameter of
	// every model has the j-th's name and shape.
	for j, p := range out.Params() {
		acc := make([]float64, p.W.Len())
		for i, d := range ds {
			for k, v := range d.Params()[j].W.Data {
				acc[k] += weights[i] * float64(v)
			}
		}
		for k, v := range acc {
			p.W.Data[k] = T(v)
		}
	}
	return out, nil
}

// AverageWeights checks an average's weights, one a model for n models,
// finite and non-negative with a positive sum, and returns them divided
// by their sum.
func AverageWeights(weights []float64, n int) ([]float64, error) {
	if len(weights) != n {
		return nil, fmt.Errorf("%d weights for %d models", len(weights), n)
	}
	sum := 0.0
	for i, w := range weights {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, fmt.Errorf("weight %d is %v; weights are finite and non-negative", i+1, w)
		}
		sum += w
	}
	if sum <= 0 {
		return nil, errors.New("the weights sum to 0")
	}
	norm := make([]float64, n)
	for i, w := range weights {
		norm[i] = w / sum
	}
	return norm, nil
}

// sameTokens reports whether two configurations' tokenizers, if they
// have them, hold the same tokens: config.json holds only their number.
func sameTokens(a, b *Config) bool {
	if (a.Tokenizer == nil) != (b.Tokenizer == nil) {
		return false
	}
	if a.Tokenizer == nil {
		return true
	}
	if a.Tokenizer.Size() != b.Tokenizer.Size() {
		return false
	}
	for i := range a.Tokenizer.Size() {
		if a.Tokenizer.Token(i) != b.Tokenizer.Token(i) {
			return false
		}
	}
	return true
}

// archJSON is c as config.json holds it, without the training record, for
// comparing two models' configurations.
func archJSON(c *Config) ([]byte, error) {
	cc := *c
	cc.Training = nil
	return json.Marshal(&cc)
}
