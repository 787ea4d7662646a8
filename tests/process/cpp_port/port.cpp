// A minimal process port in C++ (tests only, not shipped), written from docs/PROTOCOL.md: the
// exercise's MLP by hand, with and without rematerialization, and Flax's init (the recipe in
// the document's "The seeded init", constants from implementations/stacks/numpy/init.py).
//
// Build: g++ -O2 -std=c++17 -ffp-contract=off port.cpp -o port
// Flags: --name=NAME (the registered name, default cpp_port); --fault=OP:KIND makes the port
// misbehave at request OP, KIND one of crash, hang, spin, violation, noise.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// ---------------------------------------------------------------- a small JSON reader
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& operator[](const std::string& key) const {
    static const Json missing;
    auto it = fields.find(key);
    return it == fields.end() ? missing : it->second;
  }
  bool has(const std::string& key) const { return fields.count(key) > 0; }
};

struct Reader {
  const std::string& s;
  size_t i = 0;
  void space() { while (i < s.size() && isspace((unsigned char)s[i])) i++; }
  [[noreturn]] void fail(const char* what) { throw std::runtime_error(std::string("bad JSON: ") + what); }
  Json value() {
    space();
    if (i >= s.size()) fail("end of input");
    Json out;
    char c = s[i];
    if (c == '{') {
      out.kind = Json::Object;
      i++;
      space();
      if (s[i] == '}') { i++; return out; }
      for (;;) {
        space();
        std::string key = string();
        space();
        if (s[i++] != ':') fail("expected ':'");
        out.fields[key] = value();
        space();
        if (s[i] == ',') { i++; continue; }
        if (s[i] == '}') { i++; return out; }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out.kind = Json::Array;
      i++;
      space();
      if (s[i] == ']') { i++; return out; }
      for (;;) {
        out.items.push_back(value());
        space();
        if (s[i] == ',') { i++; continue; }
        if (s[i] == ']') { i++; return out; }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') { out.kind = Json::String; out.text = string(); return out; }
    if (s.compare(i, 4, "true") == 0) { i += 4; out.kind = Json::Bool; out.boolean = true; return out; }
    if (s.compare(i, 5, "false") == 0) { i += 5; out.kind = Json::Bool; return out; }
    if (s.compare(i, 4, "null") == 0) { i += 4; return out; }
    size_t start = i;
    while (i < s.size() && strchr("+-0123456789.eE", s[i])) i++;
    if (start == i) fail("unexpected character");
    out.kind = Json::Number;
    out.number = std::strtod(s.substr(start, i - start).c_str(), nullptr);
    return out;
  }
  std::string string() {
    if (s[i] != '"') fail("expected a string");
    i++;
    std::string out;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') {
        i++;
        char e = s[i];
        if (e == 'n') out += '\n'; else if (e == 't') out += '\t'; else if (e == 'u') { out += '?'; i += 4; }
        else out += e;
        i++;
      } else {
        out += s[i++];
      }
    }
    i++;
    return out;
  }
};

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') { out += '\\'; out += c; }
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

// ---------------------------------------------------------------- errors and values
struct PortError : std::runtime_error {
  std::string type;
  PortError(std::string t, const std::string& message) : std::runtime_error(message), type(std::move(t)) {}
};

static const char* B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::vector<uint8_t>& bytes) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    for (int k = 3; k >= 0; k--) out += B64[(v >> (6 * k)) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = bytes[i] << 16;
    if (i + 1 < bytes.size()) v |= bytes[i + 1] << 8;
    out += B64[(v >> 18) & 63];
    out += B64[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? B64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::vector<uint8_t> unbase64(const std::string& text) {
  std::vector<uint8_t> out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* p = strchr(B64, c);
    if (!p || !c) throw PortError("ProtocolError", "data is not base64");
    v = (v << 6) | uint32_t(p - B64);
    bits += 6;
    if (bits >= 8) { bits -= 8; out.push_back(uint8_t((v >> bits) & 0xFF)); }
  }
  return out;
}

struct Array {
  std::vector<size_t> shape;
  std::vector<float> data;
};

Array decode(const Json& value, const std::string& name) {
  if (value.kind != Json::Object || value["dtype"].text != "float32")
    throw PortError("ProtocolError", name + " must be a float32 array object");
  Array out;
  size_t count = 1;
  for (const Json& n : value["shape"].items) { out.shape.push_back(size_t(n.number)); count *= size_t(n.number); }
  std::vector<uint8_t> bytes = unbase64(value["data"].text);
  if (bytes.size() != 4 * count) throw PortError("ProtocolError", name + ": data does not match its shape");
  out.data.resize(count);
  for (size_t k = 0; k < count; k++) {
    uint32_t u = bytes[4 * k] | (bytes[4 * k + 1] << 8) | (bytes[4 * k + 2] << 16) | (uint32_t(bytes[4 * k + 3]) << 24);
    memcpy(&out.data[k], &u, 4);
  }
  return out;
}

std::string encode(const std::vector<float>& data, const std::vector<size_t>& shape) {
  std::vector<uint8_t> bytes(4 * data.size());
  for (size_t k = 0; k < data.size(); k++) {
    uint32_t u;
    memcpy(&u, &data[k], 4);
    for (int b = 0; b < 4; b++) bytes[4 * k + b] = uint8_t(u >> (8 * b));
  }
  std::string out = "{\"dtype\":\"float32\",\"shape\":[";
  for (size_t k = 0; k < shape.size(); k++) out += (k ? "," : "") + std::to_string(shape[k]);
  return out + "],\"data\":\"" + base64(bytes) + "\"}";
}

// Integers arrive as decimal strings, of any size: parse with a saturating bound.
struct Integer {
  bool negative = false;
  bool huge = false;  // past 2**64
  uint64_t magnitude = 0;
};

// docs/PROTOCOL.md, Values: null, a list or an object is a TypeError; a boolean, or a string
// that is not a decimal integer ("1.5", "nan"), a ValueError; both name the argument.
Integer integer(const Json& value, const std::string& name) {
  if (value.kind == Json::Bool) throw PortError("ValueError", name + " must be an integer, not a boolean");
  if (value.kind != Json::String) throw PortError("TypeError", name + " must be an integer (a decimal string)");
  const std::string& t = value.text;
  bool decimal = !t.empty() && t != "-";
  for (size_t k = (t.size() && t[0] == '-') ? 1 : 0; k < t.size(); k++) decimal = decimal && t[k] >= '0' && t[k] <= '9';
  if (!decimal) throw PortError("ValueError", name + " must be an integer, got " + t);
  Integer out;
  size_t i = 0;
  if (value.text[0] == '-') { out.negative = true; i = 1; }
  for (; i < value.text.size(); i++) {
    char c = value.text[i];
    unsigned __int128 next = (unsigned __int128)out.magnitude * 10 + (c - '0');
    if (next > UINT64_MAX) out.huge = true; else out.magnitude = uint64_t(next);
  }
  if (out.magnitude == 0) out.negative = false;
  return out;
}

// ---------------------------------------------------------------- the contract's checks
const uint64_t MAX_ELEMENTS = (1ull << 31) - 1;

uint64_t check_seed(const Json& value) {
  Integer s = integer(value, "seed");
  if (s.negative) throw PortError("ValueError", "seed must be non-negative, got " + value.text);
  if (s.huge || s.magnitude > (1ull << 63) - 1) throw PortError("ValueError", "seed must be at most 2**63 - 1, got " + value.text);
  return s.magnitude;
}

size_t check_features(const Json& value) {
  Integer f = integer(value, "features");
  if (f.negative || f.magnitude == 0) throw PortError("ValueError", "features must be a positive integer, got " + value.text);
  if (f.huge || f.magnitude > 46340) throw PortError("SizeLimitError", "features=" + value.text + " is too large: at most 46340");
  return size_t(f.magnitude);
}

size_t check_dim(const Json& value) {
  Integer d = integer(value, "dim");
  if (d.negative || d.magnitude == 0) throw PortError("ValueError", "dim must be a positive integer, got " + value.text);
  if (d.huge || d.magnitude > MAX_ELEMENTS) throw PortError("SizeLimitError", "dim=" + value.text + " is too large");
  return size_t(d.magnitude);
}

void check_sizes(uint64_t dim, uint64_t features, const Json& max_bytes, const std::string& dim_name) {
  std::string what = "features=" + std::to_string(features) + " with " + dim_name + " of D=" + std::to_string(dim);
  if (dim * features > MAX_ELEMENTS) throw PortError("SizeLimitError", what + " is too large: the (D, F) kernel passes 2**31 - 1 elements");
  Integer limit = integer(max_bytes, "max_bytes");
  unsigned __int128 bytes = (unsigned __int128)4 * (dim * features + features * features + 2 * features) + 4 * (dim + 3 * features);
  if (!limit.huge && bytes > limit.magnitude) throw PortError("SizeLimitError", what + " needs more bytes than the limit, " + max_bytes.text);
}

// x's dtype and shape, before its size is checked: a bool or complex x is a TypeError, any
// shape but (D,) with D >= 1 a ValueError.
uint64_t check_x_shape(const Json& value) {
  if (value.kind != Json::Object) throw PortError("TypeError", "x must be an array object");
  if (value["dtype"].text != "float32") throw PortError("TypeError", "x must be real (float32), got dtype " + value["dtype"].text);
  const Json& shape = value["shape"];
  if (shape.items.size() != 1) throw PortError("ValueError", "x must be a vector of shape (D,)");
  if (shape.items[0].number < 1) throw PortError("ValueError", "x must not be empty (D >= 1)");
  return uint64_t(shape.items[0].number);
}

std::vector<float> check_x(const Json& value) {
  check_x_shape(value);
  Array x = decode(value, "x");
  if (x.shape.size() != 1 || x.data.empty()) throw PortError("ValueError", "x must be a non-empty vector (D,)");
  for (size_t k = 0; k < x.data.size(); k++)
    if (!std::isfinite(x.data[k])) throw PortError("ValueError", "x must be finite in float32; x[" + std::to_string(k) + "] is not");
  return x.data;
}

// ---------------------------------------------------------------- Flax's init
uint32_t rotl(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

void threefry(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  static const int R[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (int i = 0; i < 5; i++) {
    for (int r : R[i % 2]) { x0 += x1; x1 = rotl(x1, r) ^ x0; }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + uint32_t(i + 1);
  }
}

float bits_f(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
uint32_t f_bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
const float TINY = bits_f(0x00800000);
float flush(float x) { return std::fabs(x) < TINY ? std::copysign(0.0f, x) : x; }

float horner(float t, const std::vector<uint32_t>& c) {
  float p = std::fmaf(t, bits_f(c[0]), bits_f(c[1]));
  for (size_t i = 2; i < c.size(); i++) p = std::fmaf(p, t, bits_f(c[i]));
  return p;
}

float log_f32(float z) {
  static const uint32_t P[9] = {0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF,
                                0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA};
  float safe = z > TINY ? z : TINY;
  uint32_t bits = f_bits(safe);
  float exponent = float(int32_t(bits >> 23) - 126);
  float mantissa = bits_f((bits & 0x807FFFFFu) | 0x3F000000u);
  bool small = mantissa < bits_f(0x3F3504F3);
  float x = (mantissa - 1.0f) + (small ? mantissa : 0.0f);
  if (small) exponent -= 1.0f;
  float x2 = x * x, x3 = x2 * x;
  auto p = [](int k) { return bits_f(P[k]); };
  float y = std::fmaf(std::fmaf(x, p(0), p(1)), x, p(2));
  float y1 = std::fmaf(std::fmaf(x, p(3), p(4)), x, p(5));
  float y2 = std::fmaf(std::fmaf(x, p(6), p(7)), x, p(8));
  y = std::fmaf(std::fmaf(y, x3, y1), x3, y2);
  y = std::fmaf(y, x3, exponent * bits_f(0xB95E8083));
  float result = ((x - x2 * 0.5f) + y) + exponent * bits_f(0x3F318000);
  if (z == 0) return -INFINITY;
  if (std::isinf(z) && z > 0) return INFINITY;
  if (z < 0 || std::isnan(z)) return NAN;
  return result;
}

float log1p_f32(float y) {
  static const std::vector<uint32_t> NUM = {0x383DE04B, 0x3EFF40C5, 0x40D284FA, 0x41EF4B9C, 0x4273CC76, 0x426473AD, 0x41A05101};
  static const uint32_t DEN[6] = {0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A, 0x42707982};
  float result;
  if (std::fabs(y) < bits_f(0x3ED413CD)) {
    float y2 = y * y;
    float den = y + bits_f(DEN[0]);
    for (int i = 1; i < 6; i++) den = std::fmaf(den, y, bits_f(DEN[i]));
    float ratio = horner(y, NUM) / den;
    result = y + ((y * y2) * ratio - y2 * 0.5f);
  } else {
    result = log_f32(y + 1.0f);
  }
  return flush(result);
}

float erf_inv(float x) {
  static const std::vector<uint32_t> CENTRAL = {0x32F16588, 0x34B84B36, 0xB66C7357, 0xB6935AC1, 0x396532DB, 0xBAA45408, 0xBB88E4EF, 0x3E7C8F63, 0x3FC02E2F};
  static const std::vector<uint32_t> TAIL = {0xB951F09B, 0x38D3B56B, 0x3AB0DC72, 0xBB70BDE7, 0x3BBC127B, 0xBBF9C5D7, 0x3C1AA57E, 0x3F8036DB, 0x40354F7E};
  x = flush(x);
  float t = log1p_f32(x * -x);
  float poly = t > -5.0f ? horner(-2.5f - t, CENTRAL) : horner(std::sqrt(-t) + -3.0f, TAIL);
  if (std::fabs(x) == 1.0f) poly = INFINITY;
  return flush(x * poly);
}

std::vector<float> lecun_kernel(uint32_t key0, uint32_t key1, size_t rows, size_t cols) {
  const float a = bits_f(0xBF745A18), b = bits_f(0x3F745A18);
  const float low = bits_f(0xBFFFFFFF), high = bits_f(0x3FFFFFFF);
  const float stddev = std::sqrt(float(1.0 / double(rows))) / bits_f(0x3F612F26);
  std::vector<float> out(rows * cols);
  for (size_t n = 0; n < out.size(); n++) {
    uint32_t y0 = 0, y1 = uint32_t(n);
    threefry(key0, key1, y0, y1);
    uint32_t m = (y0 ^ y1) >> 9;
    float unit = bits_f(m | 0x3F800000u) - 1.0f;
    float u = std::max(a, std::fmaf(unit, b - a, a));
    float z = erf_inv(u) * bits_f(0x3FB504F3);
    z = std::min(std::max(z, low), high);
    out[n] = z * stddev;
  }
  return out;
}

struct Params {
  size_t D = 0, F = 0;
  std::vector<float> w1, b1, w2, b2;
};

Params canonical_params(uint64_t seed, size_t D, size_t F) {
  const uint32_t FOLD[2] = {0xB2B71315u, 0x06A9F0DCu};
  Params p;
  p.D = D;
  p.F = F;
  uint32_t keys[2][2];
  for (int k = 0; k < 2; k++) {
    uint32_t x0 = 0, x1 = FOLD[k];
    threefry(0, uint32_t(seed), x0, x1);
    keys[k][0] = x0;
    keys[k][1] = x1;
  }
  p.w1 = lecun_kernel(keys[0][0], keys[0][1], D, F);
  p.w2 = lecun_kernel(keys[1][0], keys[1][1], F, F);
  p.b1.assign(F, 0.0f);
  p.b2.assign(F, 0.0f);
  return p;
}

// ---------------------------------------------------------------- the MLP, with its own bookkeeping
// What the forward pass keeps for backward, and what backward ran again: this port's instrument.
struct Saved { std::vector<size_t> shape; std::string origin, note, role; };
struct Tape {
  std::vector<Saved> saved;
  std::map<std::string, int> recomputed;
  int regions = 0;
  int backward_matmuls = 4;  // dW2, dh = dy W2^T, dW1, dx; one more where the hidden layer reruns
  std::vector<float> h, a;  // kept only without the checkpoint
};

std::vector<float> matvec(const std::vector<float>& v, const std::vector<float>& w, size_t rows, size_t cols) {
  std::vector<float> out(cols, 0.0f);
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) out[j] += v[i] * w[i * cols + j];
  return out;
}

void hidden(const Params& p, const std::vector<float>& x, std::vector<float>& h, std::vector<float>& a) {
  h = matvec(x, p.w1, p.D, p.F);
  for (size_t j = 0; j < p.F; j++) h[j] += p.b1[j];
  a.resize(p.F);
  for (size_t j = 0; j < p.F; j++) a[j] = h[j] > 0 ? h[j] : 0.0f;
}

std::vector<float> forward(const Params& p, const std::vector<float>& x, bool checkpoint, Tape& tape) {
  std::vector<float> h, a;
  hidden(p, x, h, a);
  std::vector<float> y = matvec(a, p.w2, p.F, p.F);
  for (size_t j = 0; j < p.F; j++) y[j] += p.b2[j];
  tape.saved = {{{p.D}, "input", "x", "x"}, {{p.D, p.F}, "parameter", "w1", ""}, {{p.F}, "parameter", "b1", ""},
                {{p.F, p.F}, "parameter", "w2", ""}};
  if (checkpoint) {
    tape.regions = 1;
  } else {
    tape.h = h;
    tape.a = a;
    tape.saved.push_back({{p.F}, "activation", "h (the relu's mask)", "h"});
    tape.saved.push_back({{p.F}, "activation", "a = relu(h)", "a"});
  }
  return y;
}

struct Grads { std::vector<float> w1, b1, w2, b2, x; };

Grads backward(const Params& p, const std::vector<float>& x, const std::vector<float>& dy, bool checkpoint, Tape& tape) {
  std::vector<float> h = tape.h, a = tape.a;
  if (checkpoint) {
    hidden(p, x, h, a);
    tape.recomputed = {{"matmul", 1}, {"add", 1}, {"relu", 1}};
    tape.backward_matmuls += 1;
  }
  Grads g;
  g.b2 = dy;
  g.w2.assign(p.F * p.F, 0.0f);
  for (size_t i = 0; i < p.F; i++)
    for (size_t j = 0; j < p.F; j++) g.w2[i * p.F + j] = a[i] * dy[j];
  std::vector<float> dh(p.F, 0.0f);
  for (size_t i = 0; i < p.F; i++) {
    float s = 0.0f;
    for (size_t j = 0; j < p.F; j++) s += dy[j] * p.w2[i * p.F + j];
    dh[i] = h[i] > 0 ? s : 0.0f;
  }
  g.b1 = dh;
  g.w1.assign(p.D * p.F, 0.0f);
  for (size_t i = 0; i < p.D; i++)
    for (size_t j = 0; j < p.F; j++) g.w1[i * p.F + j] = x[i] * dh[j];
  g.x.assign(p.D, 0.0f);
  for (size_t i = 0; i < p.D; i++) {
    float s = 0.0f;
    for (size_t j = 0; j < p.F; j++) s += dh[j] * p.w1[i * p.F + j];
    g.x[i] = s;
  }
  return g;
}

Params decode_params(const Json& value) {
  Params p;
  Array w1 = decode(value["w1"], "w1"), b1 = decode(value["b1"], "b1"), w2 = decode(value["w2"], "w2"), b2 = decode(value["b2"], "b2");
  if (w1.shape.size() != 2) throw PortError("ProtocolError", "w1 must be 2-D");
  p.D = w1.shape[0];
  p.F = w1.shape[1];
  p.w1 = w1.data; p.b1 = b1.data; p.w2 = w2.data; p.b2 = b2.data;
  return p;
}

std::string record(const Tape& tape) {
  std::string out = "{\"instrument\":\"the C++ port's own bookkeeping\",\"saved\":[";
  for (size_t k = 0; k < tape.saved.size(); k++) {
    const Saved& s = tape.saved[k];
    out += k ? "," : "";
    out += "{\"shape\":[";
    for (size_t i = 0; i < s.shape.size(); i++) out += (i ? "," : "") + std::to_string(s.shape[i]);
    out += "],\"dtype\":\"float32\",\"origin\":" + quote(s.origin) + ",\"note\":" + quote(s.note) + ",\"role\":" + quote(s.role) + "}";
  }
  out += "],\"recomputed\":{";
  bool first = true;
  for (const auto& [name, n] : tape.recomputed) { out += (first ? "" : ",") + quote(name) + ":" + std::to_string(n); first = false; }
  return out + "},\"checkpoint_regions\":" + std::to_string(tape.regions) +
         ",\"backward_matmuls\":" + std::to_string(tape.backward_matmuls) + "}";
}

// ---------------------------------------------------------------- requests
std::string handle(const Json& r, const std::string& name) {
  const std::string op = r["op"].text;
  if (op == "hello") {
    // A protocol-1 port, as written before protocol 2: it refuses any other version (the
    // adapter then asks again in 1). Its expectations are its own, declared here.
    if (r["protocol"].number != 1) throw PortError("ProtocolError", "this port speaks protocol 1");
    return "{\"name\":" + quote(name) + ",\"framework\":\"c++\",\"versions\":{\"g++\":" + quote(__VERSION__) +
           "},\"protocol\":1,\"checkpoint_api\":\"recompute the hidden layer in backward\","
           "\"instrument_family\":\"cpp_port\",\"expectations\":{"
           "\"none\":{\"roles\":[\"x\",\"h\",\"a\"],\"backward_matmuls\":4,"
           "\"why\":\"its backward reads h (for relu's mask) and a\"},"
           "\"full\":{\"roles\":[\"x\"],\"backward_matmuls\":5,"
           "\"why\":\"its backward reruns the hidden layer's matvec\"}}}";
  }
  if (op == "init_params") {
    uint64_t seed = check_seed(r["seed"]);
    size_t F = check_features(r["features"]);
    size_t D = check_dim(r["dim"]);
    check_sizes(D, F, r["max_bytes"], "dim");
    Params p = canonical_params(seed, D, F);
    return "{\"params\":{\"w1\":" + encode(p.w1, {D, F}) + ",\"b1\":" + encode(p.b1, {F}) + ",\"w2\":" + encode(p.w2, {F, F}) +
           ",\"b2\":" + encode(p.b2, {F}) + "}}";
  }
  if (op == "forward") {
    Params p = decode_params(r["params"]);
    Tape tape;
    return "{\"y\":" + encode(forward(p, decode(r["x"], "x").data, r["checkpoint"].boolean, tape), {p.F}) + "}";
  }
  if (op == "vjp" || (op == "evidence" && r["of"].text == "vjp")) {
    Params p = decode_params(r["params"]);
    std::vector<float> x = decode(r["x"], "x").data;
    std::vector<float> dy = op == "vjp" ? decode(r["cotangent"], "cotangent").data : std::vector<float>(p.F, 1.0f);
    bool checkpoint = r["checkpoint"].boolean;
    Tape tape;
    forward(p, x, checkpoint, tape);
    Grads g = backward(p, x, dy, checkpoint, tape);
    if (op == "evidence") return record(tape);
    return "{\"w1\":" + encode(g.w1, {p.D, p.F}) + ",\"b1\":" + encode(g.b1, {p.F}) + ",\"w2\":" + encode(g.w2, {p.F, p.F}) +
           ",\"b2\":" + encode(g.b2, {p.F}) + ",\"x\":" + encode(g.x, {p.D}) + "}";
  }
  if (op == "nn_checkpoint_forward" || (op == "evidence" && r["of"].text == "exercise")) {
    uint64_t seed = check_seed(r["seed"]);
    size_t F = check_features(r["features"]);
    if (op == "nn_checkpoint_forward") check_sizes(check_x_shape(r["x"]), F, r["max_bytes"], "x");
    std::vector<float> x = check_x(r["x"]);
    Params p = canonical_params(seed, x.size(), F);
    Tape tape;
    std::vector<float> y = forward(p, x, true, tape);
    if (op == "nn_checkpoint_forward") return "{\"y\":" + encode(y, {F}) + "}";
    backward(p, x, std::vector<float>(F, 1.0f), true, tape);
    return record(tape);
  }
  if (op == "shutdown") return "{}";
  throw PortError("ProtocolError", "unknown op " + op);
}

int main(int argc, char** argv) {
  std::string name = "cpp_port", fault_op, fault_kind;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg.rfind("--name=", 0) == 0) name = arg.substr(7);
    if (arg.rfind("--fault=", 0) == 0) {
      std::string spec = arg.substr(8);
      fault_op = spec.substr(0, spec.find(':'));
      fault_kind = spec.substr(spec.find(':') + 1);
    }
  }
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Json request;
    std::string id = "null";
    try {
      Reader reader{line};
      request = reader.value();
      if (request["id"].kind == Json::Number) id = std::to_string((long long)request["id"].number);
    } catch (const std::exception& e) {
      std::cout << "{\"id\":null,\"error\":{\"type\":\"ProtocolError\",\"message\":" << quote(e.what()) << "}}" << std::endl;
      continue;
    }
    const std::string op = request["op"].text;
    if (op == fault_op) {
      std::cerr << "cpp port: about to " << fault_kind << " at " << op << std::endl;
      if (fault_kind == "crash") std::abort();
      if (fault_kind == "hang") for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
      if (fault_kind == "spin") { volatile uint64_t n = 0; for (;;) n = n + 1; }
      if (fault_kind == "violation") { std::cout << "{\"id\":" << id << ",\"result\":{\"y\":{\"dtype\":\"float32\",\"shape\":[3],\"data\":\"AAAA\"}}}" << std::endl; continue; }
      if (fault_kind == "noise") std::cout << "a library that prints on stdout\n{not json either" << std::endl;
    }
    std::string answer;
    try {
      answer = "{\"id\":" + id + ",\"result\":" + handle(request, name) + "}";
    } catch (const PortError& e) {
      answer = "{\"id\":" + id + ",\"error\":{\"type\":" + quote(e.type) + ",\"message\":" + quote(e.what()) + "}}";
    } catch (const std::exception& e) {
      answer = "{\"id\":" + id + ",\"error\":{\"type\":\"InternalError\",\"message\":" + quote(e.what()) + "}}";
    }
    std::cout << answer << std::endl;
    if (op == "shutdown") return 0;
  }
  return 0;
}
