package metricsendpoints

// MetricsAddress is metricsAddress, for the tests.
var MetricsAddress = metricsAddress
