package manager

import "testing"

func TestDefaultAddrs(t *testing.T) {
	for _, tc := range []struct {
		env            string
		metrics, probe string
	}{
		{"", "127.0.0.1:8080", "127.0.0.1:8081"}, // a laptop: loopback only
		{"10.96.0.1", ":8080", ":8081"},          // a pod: Prometheus and the kubelet must reach them
	} {
		t.Setenv("KUBERNETES_SERVICE_HOST", tc.env)
		if m, p := DefaultMetricsAddr(), DefaultProbeAddr(); m != tc.metrics || p != tc.probe {
			t.Errorf("KUBERNETES_SERVICE_HOST=%q: %s, %s; want %s, %s", tc.env, m, p, tc.metrics, tc.probe)
		}
	}
}
