package lab

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// RecipePath is the firewall image recipe operators build from.
var RecipePath = filepath.Join(testenv.RepoRoot(), "hack", "firewall-image", "Dockerfile")

// RecipeImage is what the image recipe adds to metal-stack's firewall
// image: each COPY of its build context's firewall-agent puts agentBinary
// where the COPY says. The lab builds its recipe image from the recipe
// itself, so what the lab proves holds for the recipe.
func RecipeImage(recipe, agentBinary string) (Image, error) {
	f, err := os.Open(recipe) //nolint:gosec // the repository's recipe
	if err != nil {
		return Image{}, err
	}
	defer func() { _ = f.Close() }()
	img := Image{Files: map[string]File{}}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 || !strings.EqualFold(fields[0], "COPY") {
			continue
		}
		if len(fields) != 3 || fields[1] != "firewall-agent" {
			return Image{}, fmt.Errorf("%s:%d: the lab takes COPY firewall-agent <path> only: %q", recipe, n, s.Text())
		}
		img.Files[fields[2]] = File{Source: agentBinary, Mode: 0o755}
	}
	if err := s.Err(); err != nil {
		return Image{}, err
	}
	if len(img.Files) == 0 {
		return Image{}, fmt.Errorf("%s copies no firewall-agent", recipe)
	}
	return img, nil
}
