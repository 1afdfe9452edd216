package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// EmbeddingDims is the length of the vectors a Server returns when the
// request asks for no other (OpenAI's "dimensions").
const EmbeddingDims = 64

// Embedding returns the vector a Server gives text: a bag of its words.
// Each lowercase word (a run of letters and digits) adds 1 at
// fnv32a(word) % EmbeddingDims, and the vector is L2-normalised, so texts
// sharing words have a cosine above 0, unrelated ones about 0, and a text
// with itself exactly 1. A text without words gets 1 in the first
// dimension, so that every vector has unit length as real models' do.
func Embedding(text string) []float32 {
	return embedding(text, EmbeddingDims)
}

// embedding is Embedding in dims dimensions.
func embedding(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range words(text) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	var sum float64
	for _, x := range v {
		sum += float64(x * x)
	}
	if sum == 0 {
		v[0] = 1
		return v
	}
	norm := float32(math.Sqrt(sum))
	for i := range v {
		v[i] /= norm
	}
	return v
}

// words returns the lowercase words of text.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// embeddingState is how a Server answers embeddings requests and what it
// received; Server.mu guards it. The embeddings endpoint has its own
// requests and reply so that chat tests' Requests, Last and Respond are
// unaffected by the embeddings a turn computes on the side.
type embeddingState struct {
	reply    Reply
	requests []Recorded
}

// embeddingFormat is a format with an embeddings endpoint.
type embeddingFormat interface {
	// embeddingsPath is the request path of the embeddings endpoint.
	embeddingsPath() string
	// writeEmbeddings writes the vectors of texts for the request body.
	writeEmbeddings(w http.ResponseWriter, body map[string]any, texts []string, model string)
}

// RespondEmbeddings sets how the following embeddings requests are
// answered. The zero Reply answers with the vectors (see Embedding); of the
// other fields only Status (with ErrorType and ErrorMessage, answered as
// chat errors are), RetryAfter, Model and Hang apply.
func (s *Server) RespondEmbeddings(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emb.reply = r
}

// FailEmbeddings makes the following embeddings requests fail with status
// and the provider's error body; 0 makes them succeed again.
func (s *Server) FailEmbeddings(status int) {
	s.RespondEmbeddings(Reply{Status: status})
}

// EmbeddingRequests returns every embeddings request received so far, in
// order; they are not among Requests.
func (s *Server) EmbeddingRequests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.emb.requests...)
}

// EmbeddingInputs returns the texts of an embeddings request ("input", a
// string or a list of strings, in the OpenAI and ollama formats alike).
func (r Recorded) EmbeddingInputs() []string {
	texts, _ := inputTexts(r.Body["input"])
	return texts
}

// serveEmbeddings answers req when it is an embeddings request of the
// server's format, and reports whether it was. An invalid request (no
// model, no input, an empty text) gets a 400, as from the real APIs.
func (s *Server) serveEmbeddings(w http.ResponseWriter, req *http.Request, rec Recorded) bool {
	f, ok := s.format.(embeddingFormat)
	if !ok || req.Method != http.MethodPost || req.URL.Path != f.embeddingsPath() {
		return false
	}
	reply := s.recordEmbeddings(rec)
	model, _ := rec.Body["model"].(string)
	if msg := s.refusal(req, rec); msg != "" {
		s.format.writeError(w, Reply{Status: http.StatusBadRequest, ErrorMessage: msg}, model)
		return true
	}
	texts, valid := inputTexts(rec.Body["input"])
	if reply.Model != "" {
		model = reply.Model
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	switch {
	case reply.Hang:
		<-req.Context().Done()
	case reply.Status != 0 && reply.Status != http.StatusOK:
		s.format.writeError(w, reply, model)
	case !valid || model == "":
		s.format.writeError(w, Reply{Status: http.StatusBadRequest, ErrorMessage: "a model and a non-empty input are required"}, model)
	default:
		f.writeEmbeddings(w, rec.Body, texts, model)
	}
	return true
}

// recordEmbeddings stores rec and returns the reply to give.
func (s *Server) recordEmbeddings(rec Recorded) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emb.requests = append(s.emb.requests, rec)
	return s.emb.reply
}

// inputTexts reads an "input" member: a non-empty string or a non-empty
// list of them.
func inputTexts(v any) ([]string, bool) {
	if s, ok := v.(string); ok {
		return []string{s}, s != ""
	}
	items, ok := v.([]any)
	texts := make([]string, len(items))
	for i, item := range items {
		texts[i], _ = item.(string)
		ok = ok && texts[i] != ""
	}
	return texts, ok && len(items) > 0
}

// wordCount is the number of words in texts, reported as prompt tokens.
func wordCount(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(words(t))
	}
	return n
}

// embeddingsPath implements embeddingFormat.
func (openaiFormat) embeddingsPath() string { return "/v1/embeddings" }

// writeEmbeddings implements embeddingFormat: "dimensions" sets the length
// of the vectors and encoding_format "base64" sends each as the base64 of
// its little-endian float32s, as OpenAI does (langchaingo v0.1.14 asks for
// neither; the official SDKs ask for base64).
func (openaiFormat) writeEmbeddings(w http.ResponseWriter, body map[string]any, texts []string, model string) {
	dims := EmbeddingDims
	if d, ok := body["dimensions"].(float64); ok && d > 0 {
		dims = int(d)
	}
	base64Wanted := body["encoding_format"] == "base64"
	data := make([]any, len(texts))
	for i, t := range texts {
		v := embedding(t, dims)
		var vec any = v
		if base64Wanted {
			vec = base64Floats(v)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": vec}
	}
	n := wordCount(texts)
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": model,
		"usage": map[string]any{"prompt_tokens": n, "total_tokens": n},
	})
}

// base64Floats encodes v as OpenAI's base64 encoding_format does.
func base64Floats(v []float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// embeddingsPath implements embeddingFormat: /api/embed, the endpoint
// langchaingo v0.1.14 calls (one input per request, though it takes a
// list); the older /api/embeddings is not served.
func (ollamaFormat) embeddingsPath() string { return "/api/embed" }

// writeEmbeddings implements embeddingFormat.
func (ollamaFormat) writeEmbeddings(w http.ResponseWriter, _ map[string]any, texts []string, model string) {
	vecs := make([][]float32, len(texts))
	for i, t := range texts {
		vecs[i] = Embedding(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model": model, "embeddings": vecs,
		"total_duration": int64(5 * time.Millisecond), "load_duration": int64(time.Millisecond),
		"prompt_eval_count": wordCount(texts),
	})
}
