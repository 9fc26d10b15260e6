package v1alpha1

const (
	// AnnotationPaused ("true") stops every controller from acting on the
	// object, its finalizers included. Migration and cluster-move tools set it so that a
	// manager on the old seed cannot delete a machine the new seed adopts.
	AnnotationPaused = GroupName + "/paused"
	// AnnotationReconcile on a FirewallDeployment asks for an immediate
	// reconciliation (the Extension's give-back sets it); the manager removes it.
	AnnotationReconcile = GroupName + "/reconcile"
	// AnnotationNoControllerConnection makes the manager consider a Firewall
	// Ready without an agent heartbeat, for images whose agent cannot reach
	// the seed.
	AnnotationNoControllerConnection = GroupName + "/no-controller-connection"
	// AnnotationRoll on a FirewallDeployment is part of the template revision:
	// changing its value forces a new FirewallSet, as if an immutable part of
	// the template had changed.
	AnnotationRoll = GroupName + "/roll"
	// AnnotationRollSet ("true") on a FirewallMonitor in the shoot is the shoot
	// owner's request for a new firewall: the manager rolls the shoot's
	// FirewallDeployment once (a new FirewallSet, as AnnotationRoll) and
	// removes the annotation. As firewall-controller-manager's roll-set.
	AnnotationRollSet = GroupName + "/roll-set"
	// AnnotationRollSetAcknowledged on a FirewallMonitor is the manager's
	// mark, between seeing AnnotationRollSet and removing it, of the roll it
	// asked for (the value it writes into AnnotationRoll): a manager restarted
	// in between rolls no second time.
	AnnotationRollSetAcknowledged = GroupName + "/roll-set-acknowledged"
	// LabelTemplateHash on a FirewallSet is the hash of the template revision
	// it was created for.
	LabelTemplateHash = GroupName + "/template-hash"
	// AnnotationRevision on a FirewallSet is its revision number within its
	// FirewallDeployment, counting from 1.
	AnnotationRevision = GroupName + "/revision"
	// AnnotationDistanceSince on a FirewallSet is when the manager last
	// changed its distance (RFC 3339): the wait for its firewalls to announce
	// the new one counts from then (distanceTimeout).
	AnnotationDistanceSince = GroupName + "/distance-since"
	// AnnotationAgentKey on a Firewall is the public key (PKIX DER, base64)
	// of its agent's identity, pinned by the CSR approver when it approves the
	// first certificate: renewals must carry this key, and a bootstrap
	// credential delivered through the shoot is sealed to it. It travels with
	// the Firewall in a control plane migration. Only the extension writes it
	// (the agent may write its Firewall's status, not its metadata).
	AnnotationAgentKey = GroupName + "/agent-key"
	// AnnotationRevokedAgentKey on a Firewall names a key (its seal.KeyID,
	// sha256:...) that the CSR approver refuses from now on: an operator's
	// answer to a stolen agent key, followed by a roll of the firewall.
	AnnotationRevokedAgentKey = GroupName + "/revoked-agent-key"
	// AnnotationDeliveryKey on a Firewall is the public key (PKIX DER,
	// base64) that signs what the seed delivers to its agent through the
	// shoot. The agent pins it from its seed; the private key stays in the
	// seed (DeliveryKeySecretName) and the Firewall's migration state. Only
	// the extension writes it.
	AnnotationDeliveryKey = GroupName + "/delivery-key"
)

// Condition types of a Firewall.
const (
	// ConditionCreated: the machine provider has created the machine.
	ConditionCreated = "Created"
	// ConditionProvisioned: the machine has booted its image.
	ConditionProvisioned = "Provisioned"
	// ConditionConnected: the agent reports into the shoot (FirewallMonitor).
	ConditionConnected = "Connected"
	// ConditionSeedConnected: the agent reports into the seed (Firewall status).
	ConditionSeedConnected = "SeedConnected"
	// ConditionReady: the firewall forwards traffic with its current rules.
	ConditionReady = "Ready"
)

// Reasons of the Ready condition: Booting while the Firewall has never been
// Ready, NotReady once it was and is no more. Only a Firewall that was Ready
// has its health timeout run; one that boots has its create timeout.
const (
	ReasonReady    = "Ready"
	ReasonBooting  = "Booting"
	ReasonNotReady = "NotReady"
)

// Condition types of a FirewallDeployment.
const (
	// ConditionAvailable: the wanted number of Ready firewalls exists.
	ConditionAvailable = "Available"
	// ConditionProgressing: a rollout is under way and within its deadline.
	ConditionProgressing = "Progressing"
	// ConditionDistanceInForce: every firewall of a rolling update announces
	// the distance the manager set, so traffic is where the manager put it.
	// False while the roll waits for firewalls to announce a new distance
	// (the message names them), or when it went on after distanceTimeout.
	ConditionDistanceInForce = "DistanceInForce"
)

// Condition types of a FirewallSet.
const (
	// ConditionHealthy: no Firewall of the set is past its create or health
	// timeout. Written once a Firewall of the set failed; its reason tells
	// what the set does about it (Replacing, BackingOff,
	// ReplacementLimitReached, ReplacementDisabled, Recovered).
	ConditionHealthy = "Healthy"
)

// IsPaused tells whether controllers must leave the object alone.
func IsPaused(annotations map[string]string) bool {
	return annotations[AnnotationPaused] == "true"
}
