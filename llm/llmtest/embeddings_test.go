package llmtest_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm/llmtest"
)

func TestEmbeddingVectors(t *testing.T) {
	v := llmtest.Embedding("Cats, cats and DOGS!")
	var sum float64
	for _, x := range v {
		sum += float64(x * x)
	}
	if len(v) != llmtest.EmbeddingDims || math.Abs(sum-1) > 1e-5 {
		t.Errorf("length %d, squared norm %f; want %d and 1", len(v), sum, llmtest.EmbeddingDims)
	}
	if !reflect.DeepEqual(v, llmtest.Embedding("dogs and  cats\ncats")) {
		t.Errorf("case, punctuation or word order changed the vector")
	}
}

// postEmbeddings posts body to the OpenAI server's embeddings endpoint and
// decodes the answer into out; it returns the status.
func postEmbeddings(t *testing.T, srv *llmtest.Server, body string, out any) int {
	t.Helper()
	resp, err := http.Post(srv.URL+"/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

func TestOpenAIEmbeddingsBase64(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	var got struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	status := postEmbeddings(t, srv, `{"model":"m","input":"two words","encoding_format":"base64","dimensions":8}`, &got)
	if status != http.StatusOK || len(got.Data) != 1 {
		t.Fatalf("status %d, %d embeddings", status, len(got.Data))
	}
	raw, err := base64.StdEncoding.DecodeString(got.Data[0].Embedding)
	if err != nil || len(raw) != 8*4 {
		t.Fatalf("%d bytes, %v; want 8 float32s", len(raw), err)
	}
	var sum float64
	for i := 0; i < len(raw); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))
		sum += float64(x * x)
	}
	if math.Abs(sum-1) > 1e-5 {
		t.Errorf("squared norm %f, want 1", sum)
	}
}

func TestEmbeddingsRequests(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	srv.Lenient()
	var errBody map[string]any
	for _, body := range []string{`{"model":"m","input":""}`, `{"model":"m","input":["a",""]}`, `{"input":"a"}`, `{"model":"m"}`} {
		if status := postEmbeddings(t, srv, body, &errBody); status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", body, status)
		}
	}
	srv.FailEmbeddings(http.StatusServiceUnavailable)
	if status := postEmbeddings(t, srv, `{"model":"m","input":"a"}`, &errBody); status != http.StatusServiceUnavailable {
		t.Errorf("FailEmbeddings: status %d, want 503", status)
	}
	if n, inputs := len(srv.EmbeddingRequests()), srv.EmbeddingRequests()[1].EmbeddingInputs(); n != 5 || !reflect.DeepEqual(inputs, []string{"a", ""}) {
		t.Errorf("%d embeddings requests, second's inputs %q", n, inputs)
	}
	if srv.Count() != 0 {
		t.Errorf("embeddings requests counted as chat requests")
	}
}
