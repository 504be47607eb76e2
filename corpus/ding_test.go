package corpus

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lenspec/lenspec/internal/fileio"
)

// The lines below imitate the Ding format; they are written for these
// tests, not taken from the dictionary.
func TestParseDingLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []Pair
	}{
		{"phrases of an entry, single words dropped",
			"Freude {f}; Vergnügen {n} | Freuden {pl} | aus Freude | an etw. Freude haben :: joy | joys | out of joy | to take joy in sth.",
			[]Pair{{"aus Freude", "out of joy"}, {"an etw. Freude haben", "to take joy in sth."}}},
		{"slash alternatives keep the first",
			"heiß; warm {adj} | heißer Tee | Der Tee war heiß. | Das Wasser ist warm. :: hot; warm | hot/warm tea | The tea was hot/warm. | The water is warm/hot.",
			[]Pair{{"heißer Tee", "hot tea"}, {"Der Tee war heiß.", "The tea was hot."}, {"Das Wasser ist warm.", "The water is warm."}}},
		{"unequal alternatives pair with the other side's first",
			"Das ist ja toll!; Das ist prima! [ugs.] :: That is great! [coll.]",
			[]Pair{{"Das ist ja toll!", "That is great!"}, {"Das ist prima!", "That is great!"}}},
		{"unequal alternatives, English side longer",
			"sich etw. anhören {vr} :: to listen to sth.; to hear sth. out; to give sth. a listen",
			[]Pair{{"sich etw. anhören", "to listen to sth."}, {"sich etw. anhören", "to hear sth. out"}, {"sich etw. anhören", "to give sth. a listen"}}},
		{"equal alternatives pair i-to-i",
			"roter Wein {m}; kalter Tee {m} :: red wine; cold tea",
			[]Pair{{"roter Wein", "red wine"}, {"kalter Tee", "cold tea"}}},
		{"glued brackets leave nothing",
			"Farbton {m} | ein kräftiger Farbton :: colo(u)r shade | a strong colo(u)r shade",
			[]Pair{{"ein kräftiger Farbton", "a strong color shade"}}},
		{"slash abbreviations and angle-bracket spellings",
			"grüner Tee {m} <gruener Tee> /GT/ :: green tea /GT/",
			[]Pair{{"grüner Tee", "green tea"}}},
		{"semicolons and brackets inside remarks",
			"kalte Luft {f} (Wetter; Klima (allgemein)) [meteo.] :: cold air (weather; climate)",
			[]Pair{{"kalte Luft", "cold air"}}},
		{"comparison signs inside a remark",
			"dünnes Blech {n} (Dicke < 1 mm) :: thin sheet metal (thickness < 1 mm)",
			[]Pair{{"dünnes Blech", "thin sheet metal"}}},
		{"free-standing slash is ambiguous",
			"schnell / rasch nach Hause laufen {vi} :: to run home quickly", nil},
		{"free-standing slash in the target",
			"Er kam gestern. :: He came yesterday / last night.", nil},
		{"regional spelling after a label",
			"Farbe {f} der Wand :: colour [Br.]/color [Am.] of the wall",
			[]Pair{{"Farbe der Wand", "colour of the wall"}}},
		{"trailing slash drops the next word",
			"für jdn./ etw. sorgen :: to care for sb./ sth.",
			[]Pair{{"für jdn. sorgen", "to care for sb."}}},
		{"digit and acronym slashes are kept",
			"im Jahr 2009/10 | einen I/O-Fehler beheben :: in the year 2009/10 | to fix an I/O error",
			[]Pair{{"im Jahr 2009/10", "in the year 2009/10"}, {"einen I/O-Fehler beheben", "to fix an I/O error"}}},
		{"URL kept",
			"siehe https://example.org/de :: see https://example.org/en",
			[]Pair{{"siehe https://example.org/de", "see https://example.org/en"}}},
		{"closing punctuation after a removed remark",
			"Er sagte es (leise). :: He said it (quietly) !",
			[]Pair{{"Er sagte es.", "He said it!"}}},
		{"closing punctuation of the last slash alternative",
			"Das ist wahr/richtig. :: That is true/correct.",
			[]Pair{{"Das ist wahr.", "That is true."}}},
		{"quotes around sentences",
			"„Ja“, sagte er. :: 'Yes,' he said.",
			[]Pair{{"„Ja“, sagte er.", "'Yes,' he said."}}},
		{"single words are not sentences", "Hurra! :: Hooray!", nil},
		{"comment", "# Version :: test 1", nil},
		{"blank", "   ", nil},
		{"no separator", "rote Rose red rose", nil},
		{"two separators", "rote Rose :: red rose :: rose rouge", nil},
		{"misaligned sub-entries", "rote Rose | blaue Blume :: red rose", nil},
		{"CRLF", "rote Rose :: red rose\r\n", []Pair{{"rote Rose", "red rose"}}},
		{"tabs and runs of spaces", "rote\tRose  {f} ::\tred   rose", []Pair{{"rote Rose", "red rose"}}},
		{"invalid UTF-8", "rote Rose \xff :: red rose", nil},
		{"unbalanced opening bracket", "rote (Rose :: red rose", nil},
		{"unbalanced closing bracket", "rote Rose) :: red rose", nil},
		{"crossed brackets", "rote [Rose (x]) :: red rose", nil},
		{"one bad alternative",
			"rote Rose; (kaputte Blume :: red rose; broken flower",
			[]Pair{{"rote Rose", "red rose"}}},
		{"empty sub-entry at the start of a side",
			"Fragenpaar {n} | Die beiden Fragen hängen zusammen. ::  | The two questions are related.",
			[]Pair{{"Die beiden Fragen hängen zusammen.", "The two questions are related."}}},
		{"annotation only", "{m} [ugs.] | rote Rose :: (sth.) | red rose", []Pair{{"rote Rose", "red rose"}}},
		{"a pipe joined by a removal is markup", "rote |(x) Rose :: red rose", nil},
		{"placeholder ends a phrase, not a sentence",
			"Pflege von jdm. :: Care of sb.",
			[]Pair{{"Pflege von jdm.", "Care of sb."}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseDingLine(tt.line, DingOptions{})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDingLine(%q)\n got %q\nwant %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestParseDingLineMinWords(t *testing.T) {
	line := "rote Rose | eine rote Rose | Ich komme. :: red rose | a red rose | I'm coming."
	for _, tt := range []struct {
		min  int
		want []Pair
	}{
		{0, []Pair{{"rote Rose", "red rose"}, {"eine rote Rose", "a red rose"}, {"Ich komme.", "I'm coming."}}},
		{3, []Pair{{"eine rote Rose", "a red rose"}, {"Ich komme.", "I'm coming."}}},
		{4, []Pair{{"Ich komme.", "I'm coming."}}}, // sentences need two words only
	} {
		if got := ParseDingLine(line, DingOptions{MinWords: tt.min}); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("MinWords %d: got %q, want %q", tt.min, got, tt.want)
		}
	}
}

// TestParseDingLineLong checks that a pathological line costs linear
// time: one long alternative paired with 100,000 others, and 200,000
// punctuation tokens glued to their predecessor.
func TestParseDingLineLong(t *testing.T) {
	line := "ein langer Satz" + strings.Repeat(" .", 200000) + " :: " +
		strings.Repeat("a long phrase; ", 100000) + "the end"
	start := time.Now()
	got := ParseDingLine(line, DingOptions{})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("ParseDingLine took %v", d)
	}
	if len(got) != 100001 || len(got[0].Src) != len("ein langer Satz")+200000 || got[100000].Tgt != "the end" {
		t.Errorf("got %d pairs", len(got))
	}
}

func TestIsSentence(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"Ich gebe mein Bestes.", true},
		{"I'll do my best.", true},
		{"Was ist los?", true},
		{"Hilf mir!", true},
		{"„Ja“, sagte er.", true},
		{"¿Qué pasa?", true},
		{"20 Leute kamen.", true},
		{"'Yes,' he said.", true},
		{"He said “no.”", true},
		{"Hilfe!", false},                     // one word
		{"to have a passion for sth.", false}, // lower case
		{"Pflege von jdm.", false},            // placeholder
		{"Give it to sb.", false},
		{"Der Zug fährt ab", false}, // no final punctuation
		{"Wenn ich du wäre …", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := isSentence(tt.s); got != tt.want {
			t.Errorf("isSentence(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
	if IsSentence(Pair{"Ich komme.", "coming"}) || !IsSentence(Pair{"Ich komme.", "I'm coming."}) {
		t.Error("IsSentence must require both sides to be sentences")
	}
}

// dingFixture is a small dictionary in the Ding format.
func dingFixture() string {
	long := make([]string, 2000)
	longEn := make([]string, 2000)
	for i := range long {
		long[i] = "ein langer Eintrag"
		longEn[i] = "a long entry"
	}
	return strings.Join([]string{
		"# Version :: test 2",
		"# License :: made up for the tests",
		"",
		"Freude {f} | aus Freude | an etw. Freude haben :: joy | out of joy | to take joy in sth.",
		"heiß; warm {adj} | heißer Tee | Der Tee war heiß. :: hot; warm | hot/warm tea | The tea was hot/warm.\r",
		"Das ist ja toll!; Das ist prima! [ugs.] :: That is great! [coll.]",
		"schnell / rasch nach Hause laufen {vi} :: to run home quickly",
		"rote Rose | blaue Blume :: red rose",
		"kaputt (Rose :: broken rose",
		"nur ein Teil",
		"… :: …",
		strings.Join(long, " | ") + " :: " + strings.Join(longEn, " | "),
		"   ",
		"aus Freude :: out of joy",
	}, "\n") + "\n"
}

func TestReadDing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "de-en")
	if err := os.WriteFile(p, []byte(dingFixture()), 0o644); err != nil {
		t.Fatal(err)
	}
	pairs, st, err := ReadDing(p, DingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{
		{"aus Freude", "out of joy"},
		{"an etw. Freude haben", "to take joy in sth."},
		{"heißer Tee", "hot tea"},
		{"Der Tee war heiß.", "The tea was hot."},
		{"Das ist ja toll!", "That is great!"},
		{"Das ist prima!", "That is great!"},
	}
	for range 2000 {
		want = append(want, Pair{"ein langer Eintrag", "a long entry"})
	}
	want = append(want, Pair{"aus Freude", "out of joy"})
	if !reflect.DeepEqual(pairs, want) {
		t.Errorf("ReadDing pairs = %q…, want %q…", pairs[:min(8, len(pairs))], want[:8])
	}
	wantSt := DingStats{
		Lines: 14, Comments: 2, Blank: 2, Entries: 9, Malformed: 1,
		MisalignedEntries: 1, MisalignedSubEntries: 2,
		SubEntryPairs: 3 + 3 + 1 + 1 + 1 + 1 + 2000 + 1,
		Candidates:    3 + 4 + 2 + 1 + 1 + 1 + 2000 + 1,
		Sentences:     3, Phrases: 2004,
		SkippedEmpty: 1, SkippedMarkup: 1, SkippedSlash: 1, SkippedShort: 3,
	}
	if st != wantSt {
		t.Errorf("stats\n got %+v\nwant %+v", st, wantSt)
	}
	if got := Dedup(pairs); len(got) != 7 || got[6] != (Pair{"ein langer Eintrag", "a long entry"}) {
		t.Errorf("Dedup kept %d pairs: %q", len(got), got)
	}
}

func TestReadDingErrors(t *testing.T) {
	dir, write, fifo := fixtureDir(t)
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSize+1); err != nil { // sparse
		t.Fatal(err)
	}
	latin1 := write("latin1", "rote Rose :: red rose\nGr\xfc\xdfe :: greetings\n")
	tests := []struct {
		name, path, want string
		is               error
	}{
		{"missing", filepath.Join(dir, "absent"), filepath.Join(dir, "absent"), os.ErrNotExist},
		{"directory", dir, dir, fileio.ErrNotRegular},
		{"FIFO", fifo, fifo, fileio.ErrNotRegular},
		{"device", "/dev/zero", "/dev/zero", fileio.ErrNotRegular},
		{"too large", big, big, fileio.ErrTooLarge},
		{"invalid UTF-8", latin1, latin1 + ":2: invalid UTF-8", nil},
		{"no entries", write("tsv", "rote Rose\tred rose\n"), "no dictionary entries", nil},
		{"empty", write("empty", ""), "no dictionary entries", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, _, err := ReadDing(tt.path, DingOptions{}); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadDing(%s) blocked", tt.path)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) ||
				strings.Contains(err.Error(), "\n") || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("ReadDing(%s) = %v, want a one-line error naming the file with %q", tt.path, err, tt.want)
			}
		})
	}
}

func TestVerifyDing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "de-en")
	if err := os.WriteFile(p, []byte(dingFixture()), 0o644); err != nil {
		t.Fatal(err)
	}
	err := VerifyDing(p)
	const fixtureSum = "sha256 " // followed by the fixture's hash
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), DingSHA256) ||
		!strings.Contains(err.Error(), fixtureSum) || !strings.Contains(err.Error(), "trans-de-en 1.9-6") {
		t.Errorf("VerifyDing(fixture) = %v, want an error naming the file, both hashes and the package", err)
	}
	if err := VerifyDing(filepath.Join(dir, "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VerifyDing(absent) = %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyDing(fifo); !errors.Is(err, fileio.ErrNotRegular) {
		t.Errorf("VerifyDing(fifo) = %v", err)
	}
}

func FuzzParseDingLine(f *testing.F) {
	for _, s := range strings.Split(dingFixture(), "\n")[:11] {
		f.Add(s)
	}
	for _, s := range []string{
		"a b/ :: c d/", "/ab/ x y :: /cd/ z w", "a (b | c) d :: e | f", "x <y (z> w :: a b",
		"A b. :: C d.", "„x y“ :: 'z w'", "a/b/ c :: d/e/ f", "x;y; z :: a; b;c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, p := range ParseDingLine(line, DingOptions{}) {
			for _, s := range []string{p.Src, p.Tgt} {
				if s == "" || s != strings.TrimSpace(s) || s != normSpace(s) ||
					strings.ContainsAny(s, "{}[]()<>") || strings.Contains(s, " | ") || strings.Contains(s, " :: ") {
					t.Fatalf("ParseDingLine(%q) gave %q", line, s)
				}
			}
		}
	})
}
