package mnist

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"

	"github.com/lenspec/lenspec/internal/fileio"
)

// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017) has MNIST's four IDX
// files, names and shapes, with ten classes of clothing instead of
// digits. lenspec reads the copy Debian ships; it never downloads one.
const (
	// FashionPackage is the Debian package whose files are pinned.
	FashionPackage = "dataset-fashion-mnist"
	// FashionDir is where FashionPackage installs them (gzipped).
	FashionDir = "/usr/share/datasets/fashion-mnist"
)

// FashionClasses are Fashion-MNIST's class names, by label.
var FashionClasses = [NumClasses]string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// fashionFiles are FashionPackage's files (version 0.0~git20200523.55506a9-1),
// by their uncompressed size and SHA-256.
func fashionFiles() [4]pinnedFile {
	return [4]pinnedFile{
		{TrainImagesFile, imagesHeaderLen + 60000*Pixels, "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888", FashionPackage},
		{TrainLabelsFile, labelsHeaderLen + 60000, "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9", FashionPackage},
		{TestImagesFile, imagesHeaderLen + 10000*Pixels, "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b", FashionPackage},
		{TestLabelsFile, labelsHeaderLen + 10000, "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34", FashionPackage},
	}
}

// LoadFashion reads Fashion-MNIST's training and test splits from dir
// (FashionDir for Debian's package), each file raw or gzipped and checked
// against its pinned size and SHA-256 as it is read. A missing file's
// error says which package installs it; a file that differs from the pinned
// one is refused, naming it and how it differs.
func LoadFashion(dir string) (train, test *Set, err error) {
	var sets [2]*Set
	files := fashionFiles()
	for i := range sets {
		imgs, err := readPinned(dir, files[2*i])
		if err != nil {
			return nil, nil, err
		}
		labs, err := readPinned(dir, files[2*i+1])
		if err != nil {
			return nil, nil, err
		}
		n, images, err := DecodeImages(bytes.NewReader(imgs))
		if err != nil {
			return nil, nil, fmt.Errorf("fashion-mnist: %s: %w", files[2*i].name, err)
		}
		labels, err := DecodeLabels(bytes.NewReader(labs))
		if err != nil {
			return nil, nil, fmt.Errorf("fashion-mnist: %s: %w", files[2*i+1].name, err)
		}
		if len(labels) != n {
			return nil, nil, fmt.Errorf("fashion-mnist: %s: %d images but %d labels", dir, n, len(labels))
		}
		sets[i] = &Set{N: n, Images: images, Labels: labels}
	}
	return sets[0], sets[1], nil
}

// VerifyFashion checks that dir holds Fashion-MNIST's four pinned files.
func VerifyFashion(dir string) error {
	for _, pf := range fashionFiles() {
		if _, err := readPinned(dir, pf); err != nil {
			return err
		}
	}
	return nil
}

// readPinned returns the uncompressed content of pf in dir after checking
// its size and hash; errors start with "fashion-mnist:" and name the file.
func readPinned(dir string, pf pinnedFile) ([]byte, error) {
	p, err := FindFile(dir, pf.name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("fashion-mnist: %s has no %s[.gz]: install the Debian package %s (make setup does) or give its directory", dir, pf.name, pf.from)
	}
	if err != nil {
		return nil, fmt.Errorf("fashion-%w", err)
	}
	f, err := fileio.Open(p)
	if err != nil {
		return nil, fmt.Errorf("fashion-mnist: %w", err)
	}
	defer f.Close()
	r, err := decompress(f)
	if err != nil {
		return nil, fmt.Errorf("fashion-mnist: %s: %w", p, err)
	}
	var buf bytes.Buffer
	buf.Grow(int(pf.size))
	if err := copyPinned(&buf, r, pf); err != nil {
		return nil, fmt.Errorf("fashion-mnist: %s: %w", p, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if err := checkSum(sum[:], pf); err != nil {
		return nil, fmt.Errorf("fashion-mnist: %s: %w", p, err)
	}
	return buf.Bytes(), nil
}
