package docs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// documentation is every markdown file a user reads: the README and CHANGELOG
// beside docs/, and every .md file below docs/, in its folders too.
func documentation() ([]string, error) {
	files, err := filepath.Glob("../*.md")
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// collect reads the documentation at tree construction, so that every example
// is a spec of its own; a problem in reading is reported by a failing spec.
func collect() ([]*example, error) {
	files, err := documentation()
	if err != nil {
		return nil, err
	}
	var (
		all  []*example
		errs []error
	)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		blocks, err := extractBlocks(f, string(data))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range blocks {
			found, err := examplesOf(b)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			all = append(all, found...)
		}
	}
	return all, errors.Join(errs...)
}

var _ = Describe("The examples in the documentation", func() {
	examples, collectErr := collect()

	It("are all found and marked correctly", func() {
		Expect(collectErr).NotTo(HaveOccurred())
		count := map[string]int{}
		for _, e := range examples {
			count[e.kind]++
		}
		// Each guide documents each kind; a change that made the extraction
		// find none would otherwise pass silently.
		Expect(count).To(HaveKeyWithValue(kindAgentConfig, BeNumerically(">=", 4)))
		Expect(count).To(HaveKeyWithValue(kindFirewall, BeNumerically(">=", 3)))
		Expect(count).To(HaveKeyWithValue(kindACL, BeNumerically(">=", 3)))
		Expect(count).To(HaveKeyWithValue(kindPolicy, BeNumerically(">=", 1)))
		GinkgoWriter.Printf("examples checked: %v\n", count)
	})

	for _, e := range examples {
		It(fmt.Sprintf("%s behaves as documented", e), func() {
			Expect(verdict(e)).To(Succeed())
		})
	}
})
