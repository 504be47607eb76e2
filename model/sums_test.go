package model

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lenspec/lenspec/bpe"
)

// TestChecksums: Save lists every model file's sha256 in SHA256SUMS; one
// flipped byte in any of them (config.json, the weights, the tokenizer's
// files) makes Load refuse the directory with one line naming the file,
// where before it loaded another model; a directory without SHA256SUMS
// (exported from PyTorch) loads as before; a damaged or incomplete
// SHA256SUMS is refused.
func TestChecksums(t *testing.T) {
	m := tokenizedTranslator(t)
	saved := func(t *testing.T) string {
		dir := t.TempDir()
		if err := Save[float32](dir, m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := saved(t)
	sums, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ConfigFile, WeightsFile, bpe.VocabFile, bpe.MergesFile} {
		want, err := fileSum(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(sums), want+"  "+name+"\n") {
			t.Fatalf("%s lacks %s's sha256 %s (%v):\n%s", SumsFile, name, want, err, sums)
		}
	}
	if _, err := Load[float32](dir); err != nil {
		t.Fatal(err)
	}
	// A byte flipped so that the file still parses: a digit of the
	// config (max_steps), a weight's byte, a token id's, a merge's.
	flips := map[string]func([]byte) []byte{
		ConfigFile: func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"max_steps": 200`, `"max_steps": 201`, 1))
		},
		WeightsFile:    func(b []byte) []byte { b[len(b)-3] ^= 0x01; return b },
		bpe.VocabFile:  func(b []byte) []byte { b[len(b)-5] ^= 0x01; return b },
		bpe.MergesFile: func(b []byte) []byte { b[len(b)-2] ^= 0x01; return b },
	}
	for name, flip := range flips {
		dir := saved(t)
		p := filepath.Join(dir, name)
		b, _ := os.ReadFile(p)
		changed := flip(append([]byte(nil), b...))
		if string(changed) == string(b) {
			t.Fatalf("%s: the flip changed nothing", name)
		}
		os.WriteFile(p, changed, 0o644)
		_, err := Load[float32](dir)
		if err == nil || !errors.Is(err, ErrChecksum) || !strings.HasPrefix(err.Error(), p+": ") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s flipped: %v", name, err)
		}
		// Without the checksums the changed file is taken as it is.
		os.Remove(filepath.Join(dir, SumsFile))
		if _, err := Load[float32](dir); err != nil && name != bpe.VocabFile && name != bpe.MergesFile {
			t.Fatalf("%s changed, no checksums: %v", name, err)
		}
	}
	for _, c := range []struct{ name, sums, want string }{
		{"malformed", "nonsense\n", "line 1"},
		{"incomplete", strings.Join(strings.SplitAfter(string(sums), "\n")[:2], ""), "vocab.json is not listed"},
		{"listed file missing", string(sums) + strings.Repeat("0", 64) + "  extra.bin\n", "extra.bin"},
		{"a path", string(sums) + strings.Repeat("0", 64) + "  ../x\n", "line 5"},
	} {
		dir := saved(t)
		os.WriteFile(filepath.Join(dir, SumsFile), []byte(c.sums), 0o644)
		if _, err := Load[float32](dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

// shippedDigests are the shipped models' content digests, by which result
// records name them: the one list of shipped models the tests walk.
var shippedDigests = map[string]string{
	"mmnist-rnn":                       "a341fdf8715e5b167bbd4732cdf6664db97aac67467adc79a5de50d2a463cfcf",
	"mmnist-rnn-rs":                    "e526598f356e4ce982a5c8f594274f62e226fc2ce371c7518b5376c04e0c37f8",
	"mmnist-rnn-ibp":                   "0c780bb981b8faf4c7c0989597fe018a548f1bafaf71aeb1cbbbbcf1d5bd879e",
	"mmnist-rnn-crown":                 "7d84e850ba6f8bb40c3bd154a6fae36c645b57e3ade88841ca5a6da584a7ec72",
	"mmnist-rnn-crown-w3e-4":           "5248084628701eccf08739d3a860221a3828549d7c808330715bfc6df09350b8",
	"mmnist-rnn-crown-e12":             "c50e7ea7211a16b8f56413d059ba535df6c323cef6115101e5118f20fcf7d318",
	"mmnist-rnn-crown-e12-eps0.13":     "00b046907e6b7fedacb76f4ee00eac7e6fc482b2e8a5b86b616ed7ac287af9fa",
	"mmnist-rnn-crown-eps0.25":         "3cfd31b5483dc5ef41390ea511594b73782446188eda81eb5a913bb54ab048da",
	"mmnist-rnn-crown-eps0.25-w2.5e-4": "c39a3ae95c63c70ab43d381a8f3f9b0595e3a44538c53afd082563d8146c5b4e",
	"mmnist-lstm":                      "538cc142c04423c204fc17f3b45224bb8faeacf7150b83ddac1bdacc94f20f84",
	"mmnist-lstm-crown":                "8c2f73a2b7838490a5d329777d0c04837abf871ec8b64d76caca15eae5c4cccd",
	"mmnist-transformer":               "64dfae5539be661d7059e3fbd252f011c3dbc9264f86cc293cb330ca21070e1d",
	"showtell-lstm":                    "5e40d79bd87d10f763ec194c32cb6c0c49c2cd60140db2c7ac19d4b6af3548a0",
	"showtell-lstm-flat":               "15c50575c4d46c7a9a66b18433ea12ae1e205b02d65e3efadcb40f5c60840f46",
	"nmt-de-en":                        "bc540ce9cf751910bfa5c84f16fc75dd546d6f6102de118ac544c355e206bc38",
	"nmt-m30k-de-en":                   "fa9e0a1fecf883a145098b4bbebd16626b2366219244bb47789995aae3471321",
}

// shippedCaptioners are the shipped Multi-MNIST captioners' directories,
// in name order.
func shippedCaptioners() []string {
	var dirs []string
	for name := range shippedDigests {
		if strings.HasPrefix(name, "mmnist-") {
			dirs = append(dirs, filepath.Join("..", "models", name))
		}
	}
	slices.Sort(dirs)
	return dirs
}

// TestShippedModelsChecksummed: every shipped model has its SHA256SUMS and
// loads through it, and its content digest, by which result records name
// it, is what it was before the checksums were added.
func TestShippedModelsChecksummed(t *testing.T) {
	for name, digest := range shippedDigests {
		dir := filepath.Join("..", "models", name)
		if _, err := os.Stat(filepath.Join(dir, SumsFile)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := checkSums(dir); err != nil {
			t.Fatal(err)
		}
		if got, err := Digest(dir); err != nil || got != digest {
			t.Fatalf("%s: digest %s (%v), want %s", name, got, err, digest)
		}
	}
}
