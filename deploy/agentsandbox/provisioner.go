package agentsandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

// The resources the provisioner uses.
var (
	ClaimResource   = extv1beta1.GroupVersion.WithResource("sandboxclaims")
	SandboxResource = sandboxv1beta1.GroupVersion.WithResource("sandboxes")
)

// Config configures a [Provisioner].
type Config struct {
	// Client talks to the cluster. Required.
	Client dynamic.Interface
	// Namespace holds the claims. Required.
	Namespace string
	// WarmPool names the SandboxWarmPool to claim from (agent-sandbox
	// v1beta1 claims from a warm pool, which names its template).
	// Required.
	WarmPool string
	// Port is the sandbox server's port. Zero means 8080.
	Port int
	// Scheme is "ws" (the default, inside the cluster) or "wss".
	Scheme string
	// ReadyTimeout bounds the wait for a claimed sandbox. Zero means 2
	// minutes.
	ReadyTimeout time.Duration
	// PollInterval is how often the claim is read while waiting. Zero
	// means 250ms.
	PollInterval time.Duration
	// MaxLifetime is the claim's shutdown time from its creation: the
	// controller deletes it then, released or not. Zero means 1 hour.
	MaxLifetime time.Duration
	// NamePrefix starts every claim's name. Empty means "codemode-".
	NamePrefix string
	// Logger receives failures to release a claim. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Provisioner claims sandboxes; its Provision method is a
// remote.Config.Provision.
type Provisioner struct{ cfg Config }

// New checks cfg and returns a provisioner.
func New(cfg Config) (*Provisioner, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("agentsandbox: Config.Client is required")
	case cfg.Namespace == "" || cfg.WarmPool == "":
		return nil, errors.New("agentsandbox: Config.Namespace and Config.WarmPool are required")
	case cfg.Scheme != "" && cfg.Scheme != "ws" && cfg.Scheme != "wss":
		return nil, fmt.Errorf("agentsandbox: Config.Scheme %q: use ws or wss", cfg.Scheme)
	}
	if cfg.Port == 0 {
		cfg.Port = 8080
	}
	if cfg.Scheme == "" {
		cfg.Scheme = "ws"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 2 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.MaxLifetime <= 0 {
		cfg.MaxLifetime = time.Hour
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = "codemode-"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Provisioner{cfg: cfg}, nil
}

// terminal are the reasons a claim's Ready condition gives when waiting
// longer cannot help.
var terminal = map[string]bool{
	"TemplateNotFound":                  true, // the warm pool's template
	"WarmPoolNotFound":                  true,
	extv1beta1.ClaimExpiredReason:       true,
	sandboxv1beta1.SandboxReasonExpired: true,
}

// Provision claims a sandbox, waits until it is ready and returns its
// WebSocket URL and a function that deletes the claim. If the sandbox is
// not ready in time, or the claim fails, the claim is deleted and the
// error says why.
func (p *Provisioner) Provision(ctx context.Context) (string, func(), error) {
	claims := p.cfg.Client.Resource(ClaimResource).Namespace(p.cfg.Namespace)
	name := p.cfg.NamePrefix + randomSuffix()
	claim := &extv1beta1.SandboxClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.cfg.Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "codemode"}},
		Spec: extv1beta1.SandboxClaimSpec{
			WarmPoolRef: extv1beta1.SandboxWarmPoolRef{Name: p.cfg.WarmPool},
			Lifecycle: &extv1beta1.Lifecycle{
				ShutdownTime:   &metav1.Time{Time: time.Now().Add(p.cfg.MaxLifetime).Truncate(time.Second)},
				ShutdownPolicy: extv1beta1.ShutdownPolicyDelete,
			},
		},
	}
	obj, err := toUnstructured(claim)
	if err != nil {
		return "", nil, err
	}
	if _, err := claims.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return "", nil, fmt.Errorf("agentsandbox: create claim %s from warm pool %s: %w", name, p.cfg.WarmPool, err)
	}
	release := func() { p.release(name) }
	url, err := p.wait(ctx, name)
	if err != nil {
		release()
		return "", nil, err
	}
	return url, release, nil
}

// wait polls the claim until its sandbox is ready and returns its URL.
func (p *Provisioner) wait(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	claims := p.cfg.Client.Resource(ClaimResource).Namespace(p.cfg.Namespace)
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	last := "no status yet"
	for {
		var claim extv1beta1.SandboxClaim
		obj, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			err = fromUnstructured(obj, &claim)
		}
		if err != nil && ctx.Err() == nil {
			return "", fmt.Errorf("agentsandbox: read claim %s: %w", name, err)
		}
		if err == nil {
			cond := meta.FindStatusCondition(claim.Status.Conditions, string(sandboxv1beta1.SandboxConditionReady))
			switch {
			case cond != nil && cond.Status == metav1.ConditionTrue:
				return p.sandboxURL(ctx, name, claim.Status.SandboxStatus.Name)
			case cond != nil && terminal[cond.Reason]:
				return "", fmt.Errorf("agentsandbox: claim %s failed: %s: %s", name, cond.Reason, cond.Message)
			case cond != nil:
				last = cond.Reason + ": " + cond.Message
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("agentsandbox: the sandbox of claim %s was not ready within %s (last: %s): %w", name, p.cfg.ReadyTimeout, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// sandboxURL reads the ready sandbox's service address.
func (p *Provisioner) sandboxURL(ctx context.Context, claim, sandbox string) (string, error) {
	if sandbox == "" {
		sandbox = claim // a claim that did not adopt a pooled sandbox names its own after itself
	}
	obj, err := p.cfg.Client.Resource(SandboxResource).Namespace(p.cfg.Namespace).Get(ctx, sandbox, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("agentsandbox: read sandbox %s of claim %s: %w", sandbox, claim, err)
	}
	var sb sandboxv1beta1.Sandbox
	if err := fromUnstructured(obj, &sb); err != nil {
		return "", err
	}
	// The sandbox's own Ready condition must say True too: one that is
	// there but False or Unknown is not ready.
	if cond := meta.FindStatusCondition(sb.Status.Conditions, string(sandboxv1beta1.SandboxConditionReady)); cond == nil || cond.Status != metav1.ConditionTrue {
		why := "no Ready condition"
		if cond != nil {
			why = fmt.Sprintf("Ready is %s: %s: %s", cond.Status, cond.Reason, cond.Message)
		}
		return "", fmt.Errorf("agentsandbox: sandbox %s of ready claim %s is not ready (%s)", sandbox, claim, why)
	}
	if sb.Status.ServiceFQDN == "" {
		return "", fmt.Errorf("agentsandbox: sandbox %s of claim %s is ready but has no service address", sandbox, claim)
	}
	return p.cfg.Scheme + "://" + sb.Status.ServiceFQDN + ":" + strconv.Itoa(p.cfg.Port), nil
}

// release deletes the claim, with a bound of its own: the session's
// context may be gone by now.
func (p *Provisioner) release(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	policy := metav1.DeletePropagationForeground
	err := p.cfg.Client.Resource(ClaimResource).Namespace(p.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil {
		p.cfg.Logger.Error("agentsandbox: delete claim", "claim", name, "err", err)
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// fromUnstructured decodes an API answer into its type. Fields the type
// does not know are ignored, so that a newer controller's additions do not
// break it.
func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("agentsandbox: %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}
