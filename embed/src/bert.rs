//! The BERT encoder's forward pass for one sequence, in `f32`, and the sentence-transformers
//! pooling on top (mean of the token states, then unit length).
//!
//! One sequence at a time: there is no padding to mask, and a passage of a few hundred tokens
//! already gives the matrix products enough rows to run near the machine's speed. The products
//! go through `matrixmultiply` over strided views, so the attention heads are read in place
//! instead of copied out; [`gemm`] checks every view against its slice before the one unsafe
//! call.

use crate::safetensors::Tensors;
use crate::EmbedError;
use serde_json::Value;

/// The encoder's shape, from `config.json`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub vocab: usize,
    pub eps: f32,
}

fn unsupported(key: &str, rule: &str) -> EmbedError {
    EmbedError::Unsupported(format!("config.json at /{key}: {rule}"))
}

impl Config {
    /// Reads and bounds a BERT `config.json`.
    pub fn from_json(bytes: &[u8]) -> Result<Config, EmbedError> {
        let doc: Value = serde_json::from_slice(bytes)
            .map_err(|e| unsupported("", &format!("not JSON ({e})")))?;
        let size = |key: &str, max: usize| -> Result<usize, EmbedError> {
            doc[key]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| unsupported(key, &format!("must be a whole number from 1 to {max}")))
        };
        if doc["hidden_act"] != "gelu" {
            return Err(unsupported("hidden_act", "only \"gelu\" is supported"));
        }
        let eps = doc["layer_norm_eps"]
            .as_f64()
            .filter(|e| *e > 0.0 && *e < 1.0)
            .ok_or_else(|| unsupported("layer_norm_eps", "must be between 0 and 1"))?;
        let config = Config {
            hidden: size("hidden_size", 4096)?,
            layers: size("num_hidden_layers", 64)?,
            heads: size("num_attention_heads", 128)?,
            intermediate: size("intermediate_size", 16_384)?,
            max_positions: size("max_position_embeddings", 8192)?,
            type_vocab: size("type_vocab_size", 16)?,
            vocab: size("vocab_size", 1_000_000)?,
            eps: eps as f32,
        };
        if !config.hidden.is_multiple_of(config.heads) {
            return Err(unsupported(
                "num_attention_heads",
                "must divide hidden_size",
            ));
        }
        Ok(config)
    }
}

/// `y = x·Wᵀ + b` for a weight of `outputs × inputs`.
#[derive(Debug)]
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

#[derive(Debug)]
struct Norm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

#[derive(Debug)]
struct Layer {
    /// Query, key and value stacked: one product instead of three.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

/// The weights of a BERT encoder.
#[derive(Debug)]
pub struct Encoder {
    config: Config,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

fn linear(t: &Tensors, name: &str, outputs: usize, inputs: usize) -> Result<Linear, EmbedError> {
    Ok(Linear {
        weight: t.f32s(&format!("{name}.weight"), &[outputs, inputs])?,
        bias: t.f32s(&format!("{name}.bias"), &[outputs])?,
        inputs,
        outputs,
    })
}

fn norm(t: &Tensors, name: &str, width: usize) -> Result<Norm, EmbedError> {
    Ok(Norm {
        gain: t.f32s(&format!("{name}.weight"), &[width])?,
        bias: t.f32s(&format!("{name}.bias"), &[width])?,
    })
}

fn stacked(parts: [Linear; 3]) -> Linear {
    let [q, k, v] = parts;
    Linear {
        inputs: q.inputs,
        outputs: q.outputs + k.outputs + v.outputs,
        weight: [q.weight, k.weight, v.weight].concat(),
        bias: [q.bias, k.bias, v.bias].concat(),
    }
}

impl Encoder {
    /// The encoder's weights from a safetensors file with BERT's tensor names (with or without
    /// the `bert.` prefix).
    pub fn load(config: Config, tensors: &Tensors) -> Result<Encoder, EmbedError> {
        let h = config.hidden;
        let prefix = if tensors.f32s("embeddings.LayerNorm.weight", &[h]).is_ok() {
            ""
        } else {
            "bert."
        };
        let name = |rest: &str| format!("{prefix}{rest}");
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let at = |rest: &str| name(&format!("encoder.layer.{l}.{rest}"));
            layers.push(Layer {
                qkv: stacked([
                    linear(tensors, &at("attention.self.query"), h, h)?,
                    linear(tensors, &at("attention.self.key"), h, h)?,
                    linear(tensors, &at("attention.self.value"), h, h)?,
                ]),
                attention_out: linear(tensors, &at("attention.output.dense"), h, h)?,
                attention_norm: norm(tensors, &at("attention.output.LayerNorm"), h)?,
                intermediate: linear(tensors, &at("intermediate.dense"), config.intermediate, h)?,
                output: linear(tensors, &at("output.dense"), h, config.intermediate)?,
                output_norm: norm(tensors, &at("output.LayerNorm"), h)?,
            });
        }
        Ok(Encoder {
            word: tensors.f32s(
                &name("embeddings.word_embeddings.weight"),
                &[config.vocab, h],
            )?,
            position: tensors.f32s(
                &name("embeddings.position_embeddings.weight"),
                &[config.max_positions, h],
            )?,
            token_type: tensors.f32s(
                &name("embeddings.token_type_embeddings.weight"),
                &[config.type_vocab, h],
            )?,
            embedding_norm: norm(tensors, &name("embeddings.LayerNorm"), h)?,
            layers,
            config,
        })
    }

    /// The longest sequence the position table covers.
    pub fn max_positions(&self) -> usize {
        self.config.max_positions
    }

    /// The width of a vector.
    pub fn dimension(&self) -> usize {
        self.config.hidden
    }

    /// The mean-pooled, unit-length sentence vector of `ids` (at most [`Self::max_positions`]).
    pub fn embed(&self, ids: &[u32]) -> Result<Vec<f32>, EmbedError> {
        let h = self.config.hidden;
        let n = ids.len();
        if n == 0 || n > self.config.max_positions {
            return Err(EmbedError::Internal(
                "a sequence longer than the position table",
            ));
        }
        let mut x = vec![0.0f32; n * h];
        for (t, id) in ids.iter().enumerate() {
            let id = *id as usize;
            let word = self
                .word
                .get(id * h..(id + 1) * h)
                .ok_or(EmbedError::Internal("a token id outside the vocabulary"))?;
            let row = &mut x[t * h..(t + 1) * h];
            let position = &self.position[t * h..(t + 1) * h];
            for (i, v) in row.iter_mut().enumerate() {
                *v = word[i] + position[i] + self.token_type[i];
            }
        }
        layer_norm(&mut x, &self.embedding_norm, self.config.eps);
        for layer in &self.layers {
            self.layer(layer, &mut x, n)?;
        }
        let mut pooled = vec![0.0f32; h];
        for row in x.chunks_exact(h) {
            pooled.iter_mut().zip(row).for_each(|(p, v)| *p += v);
        }
        pooled.iter_mut().for_each(|v| *v /= n as f32);
        let length = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        pooled.iter_mut().for_each(|v| *v /= length);
        Ok(pooled)
    }

    fn layer(&self, layer: &Layer, x: &mut [f32], n: usize) -> Result<(), EmbedError> {
        let (h, heads) = (self.config.hidden, self.config.heads);
        let width = h / heads;
        let qkv = apply(&layer.qkv, x, n)?;
        let mut context = vec![0.0f32; n * h];
        let mut scores = vec![0.0f32; n * n];
        let scale = 1.0 / (width as f32).sqrt();
        for head in 0..heads {
            let column = head * width;
            let q = View::new(&qkv, column, n, width, 3 * h, 1);
            let k_t = View::new(&qkv, h + column, width, n, 1, 3 * h);
            gemm(scale, q, k_t, 0.0, ViewMut::new(&mut scores, 0, n, n, n, 1))?;
            scores.chunks_exact_mut(n).for_each(softmax);
            let p = View::new(&scores, 0, n, n, n, 1);
            let v = View::new(&qkv, 2 * h + column, n, width, 3 * h, 1);
            gemm(
                1.0,
                p,
                v,
                0.0,
                ViewMut::new(&mut context, column, n, width, h, 1),
            )?;
        }
        let mut attended = apply(&layer.attention_out, &context, n)?;
        attended.iter_mut().zip(x.iter()).for_each(|(a, r)| *a += r);
        layer_norm(&mut attended, &layer.attention_norm, self.config.eps);
        let mut inner = apply(&layer.intermediate, &attended, n)?;
        inner.iter_mut().for_each(|v| *v = gelu(*v));
        let mut out = apply(&layer.output, &inner, n)?;
        out.iter_mut()
            .zip(attended.iter())
            .for_each(|(o, r)| *o += r);
        layer_norm(&mut out, &layer.output_norm, self.config.eps);
        x.copy_from_slice(&out);
        Ok(())
    }
}

/// Sequences this short (a query) go through [`few_rows`]: a general product would repack the
/// whole weight matrix for a handful of rows, which costs more than the arithmetic.
const FEW_ROWS: usize = 48;

fn apply(linear: &Linear, x: &[f32], n: usize) -> Result<Vec<f32>, EmbedError> {
    if n <= FEW_ROWS {
        return Ok(few_rows(linear, x, n));
    }
    let mut y: Vec<f32> = linear
        .bias
        .iter()
        .copied()
        .cycle()
        .take(n * linear.outputs)
        .collect();
    let a = View::new(x, 0, n, linear.inputs, linear.inputs, 1);
    let w_t = View::new(
        &linear.weight,
        0,
        linear.inputs,
        linear.outputs,
        1,
        linear.inputs,
    );
    let c = ViewMut::new(&mut y, 0, n, linear.outputs, linear.outputs, 1);
    gemm(1.0, a, w_t, 1.0, c)?;
    Ok(y)
}

/// `x·Wᵀ + b` one weight row at a time against every row of `x`, four rows of `x` per pass, so
/// each weight is read from memory once; with AVX2 and FMA when the processor has them.
fn few_rows(linear: &Linear, x: &[f32], n: usize) -> Vec<f32> {
    let (k, outputs) = (linear.inputs, linear.outputs);
    let rows: Vec<&[f32]> = x.chunks_exact(k).take(n).collect();
    let mut y = vec![0.0f32; rows.len() * outputs];
    let dot4 = dot4_kernel();
    for (o, (w, b)) in linear.weight.chunks_exact(k).zip(&linear.bias).enumerate() {
        for (group, quad) in rows.chunks(4).enumerate() {
            let pick = |i: usize| quad.get(i).copied().unwrap_or(quad[0]);
            let sums = dot4([pick(0), pick(1), pick(2), pick(3)], w);
            for (i, sum) in sums.iter().take(quad.len()).enumerate() {
                y[(group * 4 + i) * outputs + o] = sum + b;
            }
        }
    }
    y
}

type Dot4 = fn([&[f32]; 4], &[f32]) -> [f32; 4];

/// The fastest four-way dot product this processor runs.
fn dot4_kernel() -> Dot4 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        return dot4_avx2;
    }
    dot4_portable
}

fn dot4_portable(rows: [&[f32]; 4], w: &[f32]) -> [f32; 4] {
    rows.map(|row| row.iter().zip(w).map(|(a, b)| a * b).sum())
}

#[cfg(target_arch = "x86_64")]
fn dot4_avx2(rows: [&[f32]; 4], w: &[f32]) -> [f32; 4] {
    if rows.iter().any(|r| r.len() != w.len()) {
        return dot4_portable(rows, w);
    }
    // SAFETY: `dot4_kernel` hands this function out only after seeing AVX2 and FMA, and every
    // row was just checked to be as long as `w`, which is all `avx2::dot4` reads.
    unsafe { avx2::dot4(rows, w) }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Four dot products of equal-length slices against `w`: sixteen floats a step, two
    /// independent sums per row so the multiply-adds overlap, the tail in scalar code.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot4(rows: [&[f32]; 4], w: &[f32]) -> [f32; 4] {
        let body = w.len() / 16 * 16;
        let mut low = [_mm256_setzero_ps(); 4];
        let mut high = [_mm256_setzero_ps(); 4];
        let mut at = 0;
        while at < body {
            // SAFETY (for every load): `at + 16 <= body <= w.len()`, and every row is as long
            // as `w`.
            let (w0, w1) = unsafe {
                (
                    _mm256_loadu_ps(w.as_ptr().add(at)),
                    _mm256_loadu_ps(w.as_ptr().add(at + 8)),
                )
            };
            for r in 0..4 {
                let p = rows[r].as_ptr();
                let (x0, x1) =
                    unsafe { (_mm256_loadu_ps(p.add(at)), _mm256_loadu_ps(p.add(at + 8))) };
                low[r] = _mm256_fmadd_ps(x0, w0, low[r]);
                high[r] = _mm256_fmadd_ps(x1, w1, high[r]);
            }
            at += 16;
        }
        let mut out = [0.0f32; 4];
        for r in 0..4 {
            let mut lanes = [0.0f32; 8];
            // SAFETY: `lanes` holds exactly the eight floats stored.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(low[r], high[r])) };
            let tail: f32 = rows[r][body..]
                .iter()
                .zip(&w[body..])
                .map(|(a, b)| a * b)
                .sum();
            out[r] = lanes.iter().sum::<f32>() + tail;
        }
        out
    }
}

fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let width = norm.gain.len();
    for row in x.chunks_exact_mut(width) {
        let mean = row.iter().sum::<f32>() / width as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
        let inverse = 1.0 / (variance + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = (*v - mean) * inverse * g + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// GELU with the exact error function, as BERT's "gelu" is.
fn gelu(x: f32) -> f32 {
    let x = f64::from(x);
    (0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))) as f32
}

/// The error function to about 1e-7 (Abramowitz and Stegun 7.1.26), ample for `f32` states.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    if x < 0.0 {
        -y
    } else {
        y
    }
}

/// A strided matrix read out of a slice.
#[derive(Clone, Copy)]
struct View<'a> {
    data: &'a [f32],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> View<'a> {
    fn new(data: &'a [f32], offset: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> Self {
        View {
            data,
            offset,
            rows,
            cols,
            row_stride: rs,
            col_stride: cs,
        }
    }
}

/// A strided matrix written into a slice.
struct ViewMut<'a> {
    data: &'a mut [f32],
    offset: usize,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> ViewMut<'a> {
    fn new(
        data: &'a mut [f32],
        offset: usize,
        rows: usize,
        cols: usize,
        rs: usize,
        cs: usize,
    ) -> Self {
        ViewMut {
            data,
            offset,
            rows,
            cols,
            row_stride: rs,
            col_stride: cs,
        }
    }
}

/// Whether every element a view names lies inside a slice of `len`.
fn inside(len: usize, offset: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    let last = (rows.checked_sub(1))
        .and_then(|r| r.checked_mul(rs))
        .and_then(|r| {
            cols.checked_sub(1)
                .and_then(|c| c.checked_mul(cs))
                .and_then(|c| r.checked_add(c))
        });
    last.and_then(|l| l.checked_add(offset))
        .is_some_and(|l| l < len)
}

/// `c = alpha·a·b + beta·c` over strided views.
fn gemm(alpha: f32, a: View<'_>, b: View<'_>, beta: f32, c: ViewMut<'_>) -> Result<(), EmbedError> {
    let fits = a.cols == b.rows
        && c.rows == a.rows
        && c.cols == b.cols
        && inside(
            a.data.len(),
            a.offset,
            a.rows,
            a.cols,
            a.row_stride,
            a.col_stride,
        )
        && inside(
            b.data.len(),
            b.offset,
            b.rows,
            b.cols,
            b.row_stride,
            b.col_stride,
        )
        && inside(
            c.data.len(),
            c.offset,
            c.rows,
            c.cols,
            c.row_stride,
            c.col_stride,
        )
        && [
            a.row_stride,
            a.col_stride,
            b.row_stride,
            b.col_stride,
            c.row_stride,
            c.col_stride,
        ]
        .iter()
        .all(|s| isize::try_from(*s).is_ok());
    if !fits {
        return Err(EmbedError::Internal(
            "a matrix product over views that do not fit",
        ));
    }
    // SAFETY: the checks above prove every element the three views address lies inside its
    // slice, the strides fit `isize`, and `c` is borrowed mutably, so it aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            a.rows,
            a.cols,
            b.cols,
            alpha,
            a.data.as_ptr().add(a.offset),
            a.row_stride as isize,
            a.col_stride as isize,
            b.data.as_ptr().add(b.offset),
            b.row_stride as isize,
            b.col_stride as isize,
            beta,
            c.data.as_mut_ptr().add(c.offset),
            c.row_stride as isize,
            c.col_stride as isize,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_products_match_the_schoolbook_and_a_view_past_its_slice_is_refused() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2×3
        let b = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3×2
        let mut c = [0.0; 4];
        gemm(
            1.0,
            View::new(&a, 0, 2, 3, 3, 1),
            View::new(&b, 0, 3, 2, 2, 1),
            0.0,
            ViewMut::new(&mut c, 0, 2, 2, 2, 1),
        )
        .expect("fits");
        assert_eq!(c, [4.0, 5.0, 10.0, 11.0]);
        let mut t = [0.0; 4];
        gemm(
            1.0,
            View::new(&a, 0, 2, 3, 3, 1),
            View::new(&a, 0, 3, 2, 1, 3),
            0.0,
            ViewMut::new(&mut t, 0, 2, 2, 2, 1),
        )
        .expect("a·aᵀ");
        assert_eq!(t, [14.0, 32.0, 32.0, 77.0]);
        let past = gemm(
            1.0,
            View::new(&a, 1, 2, 3, 3, 1),
            View::new(&b, 0, 3, 2, 2, 1),
            0.0,
            ViewMut::new(&mut c, 0, 2, 2, 2, 1),
        );
        assert!(past.is_err());
    }

    #[test]
    fn the_few_rows_path_agrees_with_the_general_product_on_every_kernel() {
        let (inputs, outputs, n) = (37, 9, 6);
        let value = |i: usize| ((i * 7919 % 1000) as f32 / 500.0) - 1.0;
        let linear = Linear {
            weight: (0..inputs * outputs).map(value).collect(),
            bias: (0..outputs).map(|i| value(i + 3)).collect(),
            inputs,
            outputs,
        };
        let x: Vec<f32> = (0..n * inputs).map(|i| value(i + 11)).collect();
        let mut general: Vec<f32> = linear
            .bias
            .iter()
            .copied()
            .cycle()
            .take(n * outputs)
            .collect();
        gemm(
            1.0,
            View::new(&x, 0, n, inputs, inputs, 1),
            View::new(&linear.weight, 0, inputs, outputs, 1, inputs),
            1.0,
            ViewMut::new(&mut general, 0, n, outputs, outputs, 1),
        )
        .expect("fits");
        let few = few_rows(&linear, &x, n);
        for (a, b) in few.iter().zip(&general) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
        let rows: Vec<&[f32]> = x.chunks_exact(inputs).take(4).collect();
        let w = &linear.weight[..inputs];
        let portable = dot4_portable([rows[0], rows[1], rows[2], rows[3]], w);
        let fastest = dot4_kernel()([rows[0], rows[1], rows[2], rows[3]], w);
        for (a, b) in portable.iter().zip(fastest) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
    }

    #[test]
    fn erf_and_gelu_hold_their_known_values() {
        assert!((erf(0.5) - 0.520_499_877_8).abs() < 2e-7);
        assert!((erf(-1.0) + 0.842_700_792_9).abs() < 2e-7);
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert_eq!(gelu(0.0), 0.0);
    }
}
