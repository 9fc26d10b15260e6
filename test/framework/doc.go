// Package framework is the harness of the end-to-end tests and the demo: it
// starts what a Gardener landscape has around this extension (seed and shoot
// control planes, the extension in a seed with Gardener's TokenRequestor, the
// objects gardenlet keeps in a shoot namespace) and reaches into the local
// machines (network namespaces) to send real packets. It returns errors
// instead of asserting, so that a plain program such as the demo can use it
// as well as the Ginkgo suites; like Gardener's test/framework it is not
// part of the product.
package framework
