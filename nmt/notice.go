package nmt

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/internal/fileio"
)

// dingLicense is the notice a model directory trained on the Ding
// dictionary carries: its weights and vocabulary derive from GPL-2+ text.
const dingLicense = `This model directory (config.json, model.safetensors, vocab.json,
merges.txt) was derived by training on the German-English dictionary
"Ding" by Frank Richter (https://dict.tu-chemnitz.de/), as shipped by
Debian in the package %s (/usr/share/trans/de-en, sha256 %s),
which is licensed under the GNU General Public License, version 2 or later.

This model directory is therefore distributed under the GNU General Public
License, version 2 or (at your option) any later version (SPDX:
GPL-2.0-or-later), separately from the code of lenspec (MIT). The source of
this work is the dictionary named above together with lenspec's code; the
exact command that rebuilds it on Debian 12 is:

    %s

You should have received a copy of the GNU General Public License along
with this model; see /usr/share/common-licenses/GPL-2 on Debian, or
<https://www.gnu.org/licenses/>.
`

// multi30kNotice is the notice a model directory trained on Multi30k
// carries: where its weights and vocabulary come from, and that none of
// the dataset's text is in it.
const multi30kNotice = `This model directory (config.json, model.safetensors, vocab.json,
merges.txt) was trained by lenspec on Multi30k task 1 German-English
(train split, 29,000 sentence pairs; val for model selection):

    Desmond Elliott, Stella Frank, Khalil Sima'an and Lucia Specia.
    Multi30K: Multilingual English-German Image Descriptions.
    Proceedings of the 5th Workshop on Vision and Language, 2016.
    https://github.com/multi30k/dataset (data/task1/raw/)

The raw files it was trained on are pinned by sha256 (their sha256sum
listing hashes to %s).
The dataset states no licence. No sentence of it is in this directory:
the weights and the BPE vocabulary (sub-word units and their merges) are
learnt from it. Cite the dataset's authors when you use this model.

The exact command that rebuilds it on Debian 12, given a copy of the raw
files (lenspec data multi30k --from DIR imports them first):

    %s
`

// WriteNotice writes the notice the corpus asks of a model trained on it
// into dir: LICENSE (GPL-2.0-or-later) for the Ding dictionary, NOTICE
// for Multi30k, nothing for a corpus of the user's own. training is the
// model's training record, whose commands (TrainingChain) rebuild it.
func WriteNotice(dir string, sp *corpus.Splits, training map[string]any) error {
	rebuild := strings.Join(TrainingChain(training), ", then\n    ")
	switch sp.Format {
	case "ding":
		return fileio.WriteFileAtomic(filepath.Join(dir, "LICENSE"), []byte(fmt.Sprintf(dingLicense, corpus.DingPackage, sp.SHA256, rebuild)))
	case "multi30k":
		return fileio.WriteFileAtomic(filepath.Join(dir, "NOTICE"), []byte(fmt.Sprintf(multi30kNotice, corpus.Multi30kSHA256, rebuild)))
	}
	return nil
}
