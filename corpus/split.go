package corpus

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// The proposed split of the Ding corpus. With SplitSentences on the
// deduplicated pairs of the pinned dictionary they give 1,092 dev and
// 1,018 test sentences, about a thousand each for corpus BLEU, and leave
// 144,155 training pairs with 90 % of the sentences.
const (
	DefaultSplitSeed uint64 = 1
	DefaultDevFrac          = 0.05
	DefaultTestFrac         = 0.05
)

// part is one of the three parts of a split.
type part int

const (
	trainPart part = iota
	devPart
	testPart
)

// Split divides pairs into train, dev and test parts, each in input order.
//
// The rule: the source text is normalised to its key (lower case, the runs
// of letters and digits joined by single spaces, so "Ich komme!" and "ich
// komme." share a key); h is the 64-bit FNV-1a hash of the seed as 8
// little-endian bytes followed by the key, passed through the SplitMix64
// finaliser; u = (h >> 11) / 2^53 is uniform in [0, 1). A pair goes to test
// if u < testFrac, else to dev if u < testFrac+devFrac, else to train.
//
// So all pairs with the same (normalised) source land in the same part,
// and where a pair goes depends only on the seed and its source, not on
// the other pairs: adding data to a corpus never moves a test pair into
// training. Part sizes are only expected to match the fractions. An error
// is returned for fractions that are negative, not finite or sum above 1.
func Split(pairs []Pair, seed uint64, devFrac, testFrac float64) (train, dev, test []Pair, err error) {
	if err := checkFractions(devFrac, testFrac); err != nil {
		return nil, nil, nil, err
	}
	for _, p := range pairs {
		switch assign(splitKey(p.Src), seed, devFrac, testFrac) {
		case devPart:
			dev = append(dev, p)
		case testPart:
			test = append(test, p)
		default:
			train = append(train, p)
		}
	}
	return train, dev, test, nil
}

// SplitSentences is Split for a translator evaluated on sentences: dev and
// test hold only sentence pairs (IsSentence), phrases train.
//
// A source key is an evaluation candidate if any pair with that key is a
// sentence pair; the pairs of all other keys go to train. A candidate key
// is assigned a part by Split's rule (devFrac and testFrac are thus
// fractions of the candidate keys, not of all pairs). A key assigned to
// dev or test contributes only its first sentence pair there, since
// evaluation uses one reference per source; its other pairs are dropped,
// not trained on, so no test source is seen in training. Being a candidate
// is the only decision that looks beyond the pair itself.
func SplitSentences(pairs []Pair, seed uint64, devFrac, testFrac float64) (train, dev, test []Pair, err error) {
	if err := checkFractions(devFrac, testFrac); err != nil {
		return nil, nil, nil, err
	}
	keys := make([]string, len(pairs))
	candidate := map[string]bool{}
	for i, p := range pairs {
		keys[i] = splitKey(p.Src)
		if IsSentence(p) {
			candidate[keys[i]] = true
		}
	}
	used := map[string]bool{}
	for i, p := range pairs {
		k := keys[i]
		if !candidate[k] {
			train = append(train, p)
			continue
		}
		pt := assign(k, seed, devFrac, testFrac)
		switch {
		case pt == trainPart:
			train = append(train, p)
		case used[k] || !IsSentence(p):
			// Dropped: a second reference, or a phrase whose source is
			// an evaluation sentence.
		case pt == devPart:
			used[k] = true
			dev = append(dev, p)
		default:
			used[k] = true
			test = append(test, p)
		}
	}
	return train, dev, test, nil
}

func checkFractions(devFrac, testFrac float64) error {
	ok := func(f float64) bool { return f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f) }
	if !ok(devFrac) || !ok(testFrac) || devFrac+testFrac > 1 {
		return fmt.Errorf("corpus: split fractions dev %v, test %v: want non-negative fractions with dev+test at most 1", devFrac, testFrac)
	}
	return nil
}

// splitKey normalises a source text for Split.
func splitKey(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// assign applies Split's rule to a key.
func assign(key string, seed uint64, devFrac, testFrac float64) part {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(key))
	x := h.Sum64()
	// SplitMix64's finaliser: FNV's high bits mix poorly for short keys.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	u := float64(x>>11) / (1 << 53)
	switch {
	case u < testFrac:
		return testPart
	case u < testFrac+devFrac:
		return devPart
	}
	return trainPart
}
