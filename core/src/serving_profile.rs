//! The sensitivity ceiling `<data>/auth/serving-profile`: which sensitivity levels this daemon
//! may disclose. Absent means `internal`. Any doubt about the file refuses daemon start rather
//! than guessing a ceiling, because a wrong guess discloses.

use crate::datadir::DataDir;
use crate::CoreError;
use std::os::unix::fs::PermissionsExt;
use theurian_protocol::migration::Sensitivity;

/// Largest profile file accepted, in bytes.
const MAX_PROFILE_BYTES: u64 = 64;

/// Every level, least sensitive first: the schema lists them in that order.
pub const LEVELS: &[Sensitivity] = Sensitivity::ALL;

/// The ceiling the daemon serves under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceiling(pub Sensitivity);

impl Ceiling {
    /// The levels visible under this ceiling, least sensitive first.
    pub fn visible(self) -> Vec<Sensitivity> {
        let rank = LEVELS.iter().position(|l| *l == self.0).unwrap_or(1);
        LEVELS[..=rank].to_vec()
    }

    /// The visible levels as the store spells them.
    pub fn visible_names(self) -> Vec<&'static str> {
        self.visible().iter().map(|s| name(*s)).collect()
    }
}

/// A level as the store and the schema spell it.
pub fn name(level: Sensitivity) -> &'static str {
    level.as_str()
}

/// Reads the ceiling, refusing anything but a private regular file naming one level.
pub fn load(data: &DataDir) -> Result<Ceiling, CoreError> {
    let path = data.serving_profile();
    let cure = format!(
        "Write exactly one of public, internal, confidential or restricted into {}, with mode 0600 in a 0700 directory, or delete it to serve under `internal`.",
        path.display()
    );
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Ceiling(Sensitivity::Internal))
        }
        Err(e) => return Err(CoreError::io("inspect", &path, &e)),
    };
    if !meta.file_type().is_file() {
        return Err(CoreError::failure(
            format!(
                "The serving profile {} is not a regular file.",
                path.display()
            ),
            cure,
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(CoreError::failure(
            format!(
                "The serving profile {} is accessible to other users.",
                path.display()
            ),
            cure,
        ));
    }
    let dir_mode = std::fs::metadata(data.auth_dir())
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if dir_mode & 0o077 != 0 {
        return Err(CoreError::failure(
            format!(
                "The directory {} is accessible to other users.",
                data.auth_dir().display()
            ),
            cure,
        ));
    }
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(CoreError::failure(
            format!(
                "The serving profile {} is larger than {MAX_PROFILE_BYTES} bytes.",
                path.display()
            ),
            cure,
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| CoreError::io("read", &path, &e))?;
    let word = String::from_utf8(bytes).map_err(|_| {
        CoreError::failure(
            format!("The serving profile {} is not UTF-8 text.", path.display()),
            cure.clone(),
        )
    })?;
    let word = word.trim().to_lowercase();
    word.parse::<Sensitivity>().map(Ceiling).map_err(|_| {
        CoreError::failure(
            format!(
                "The serving profile {} does not name a sensitivity level.",
                path.display()
            ),
            cure,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_are_the_schema_spellings_in_rank_order() {
        for &level in LEVELS {
            assert_eq!(name(level), level.to_string());
        }
        assert_eq!(
            Ceiling(Sensitivity::Confidential).visible_names(),
            ["public", "internal", "confidential"]
        );
    }

    fn with_profile(text: &str, mode: u32) -> Result<Ceiling, CoreError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(dir.path());
        crate::fsutil::ensure_dir(&data.auth_dir(), 0o700).expect("auth dir");
        std::fs::write(data.serving_profile(), text).expect("write");
        std::fs::set_permissions(
            data.serving_profile(),
            std::fs::Permissions::from_mode(mode),
        )
        .expect("chmod");
        load(&data)
    }

    #[test]
    fn absent_means_internal_and_words_are_case_folded() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            load(&DataDir::at(dir.path())).expect("load").visible(),
            vec![Sensitivity::Public, Sensitivity::Internal]
        );
        assert_eq!(
            with_profile(" Confidential\n", 0o600).expect("load").0,
            Sensitivity::Confidential
        );
    }

    #[test]
    fn unknown_words_empty_files_and_shared_modes_are_refused() {
        assert!(with_profile("secret", 0o600).is_err());
        assert!(with_profile("", 0o600).is_err());
        assert!(with_profile("public", 0o644).is_err());
    }
}
