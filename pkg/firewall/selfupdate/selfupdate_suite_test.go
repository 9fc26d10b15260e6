package selfupdate_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// sleepEnv makes the test binary a process that only waits: an agent on
// trial that never applies.
const sleepEnv = "SELFUPDATE_TEST_SLEEP"

func init() {
	if os.Getenv(sleepEnv) == "true" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

func TestSelfUpdate(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Self-update Suite")
}
