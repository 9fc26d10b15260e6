package imagebuild

import v1 "github.com/google/go-containerregistry/pkg/v1"

// CompressedSize is what a pull transfers: manifest, config and the
// compressed layers.
func CompressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	total := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	return total, nil
}
