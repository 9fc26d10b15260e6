package v1alpha1

// DropLog sends the packets the ruleset drops (and, with
// LogAcceptedConnections, the first packet of every accepted connection)
// through an NFLOG group to the agent, which ships them in batches to the
// receiver in the shoot's firewall namespace.
type DropLog struct {
	// Group is the NFLOG group the kernel sends the events to, 1-65535;
	// DefaultDropLogGroup when unset. No other program on the firewall may
	// read it.
	Group uint16 `json:"group,omitempty"`
	// RatePerSecond limits the events the kernel sends per second (per
	// logging rule), 1-100000; DefaultDropLogRate when unset. Packets over
	// it are dropped (or accepted) without an event.
	RatePerSecond uint32 `json:"ratePerSecond,omitempty"`
	// LogAcceptedConnections also logs the first packet of every accepted
	// connection.
	LogAcceptedConnections bool `json:"logAcceptedConnections,omitempty"`
	// QueueSize bounds the events waiting to be sent, 1-1000000;
	// DefaultDropLogQueueSize when unset. Events that find it full are
	// dropped and counted.
	QueueSize int32 `json:"queueSize,omitempty"`
	// ReceiverURL is the receiver's https URL. Empty: the agent looks the
	// receiver up in the shoot (the ready endpoints of Service
	// firewall/firewall-drop) with its shoot credential.
	ReceiverURL string `json:"receiverURL,omitempty"`
}

// Defaults of DropLog.
const (
	DefaultDropLogGroup     = 10
	DefaultDropLogRate      = 100
	DefaultDropLogQueueSize = 10000
	MaxDropLogRate          = 100000
	MaxDropLogQueueSize     = 1000000
)

// WithDefaults returns d with its defaults filled in; nil stays nil.
func (d *DropLog) WithDefaults() *DropLog {
	if d == nil {
		return nil
	}
	out := *d
	if out.Group == 0 {
		out.Group = DefaultDropLogGroup
	}
	if out.RatePerSecond == 0 {
		out.RatePerSecond = DefaultDropLogRate
	}
	if out.QueueSize == 0 {
		out.QueueSize = DefaultDropLogQueueSize
	}
	return &out
}
