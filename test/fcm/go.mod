// A build-only module: firewall-controller-manager v0.6.1, the version
// gardener-extension-provider-metal deploys, built from the module proxy with
// its own dependencies (hack/build-fcm.sh), so that its binary meets this
// extension only through the kube-apiserver and the metal-api. No Go files:
// `go mod tidy` would empty it; the go.sum is what `go build` needs.
module github.com/metal-firewall/gardener-extension-firewall/test/fcm

go 1.26

require github.com/metal-stack/firewall-controller-manager v0.6.1
