package metalapi

import (
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// ExpectNoViolations fails the running spec with every request and answer
// that did not match metal-go's metal-api.json. Every suite that runs the
// server calls it when it is done with it: a violation is a test failure,
// whatever the client made of the answer.
func (s *Server) ExpectNoViolations() {
	ginkgo.GinkgoHelper()
	v := s.Violations()
	gomega.Expect(v).To(gomega.BeEmpty(), "requests or answers that are not the metal-api spec's:\n%s", strings.Join(v, "\n"))
}
