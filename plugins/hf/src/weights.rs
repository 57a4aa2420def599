//! The checkpoint's safetensors weights: one `model.safetensors`, or the shards that
//! `model.safetensors.index.json` lists.
//!
//! Only the headers are read up front; each tensor is then read from its file on its own
//! (seek + read) and moved to the device, so loading holds **one tensor** on the host at a
//! time besides the weights already on the device — no copy of the whole file, and no memory
//! map (mapping a file is `unsafe` in Rust, which this workspace keeps to the plugin loader).
//! Every header is checked against the file before any tensor is read: a shard cut short (an
//! interrupted download) is refused naming the file, its expected and actual size and the
//! first tensor that lies past its end.

use crate::error::{HfError, Result};
use burn::tensor::{DType, Device, Tensor, TensorData};
use safetensors::tensor::TensorInfo;
use safetensors::Dtype;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The single-file weights name.
pub const SINGLE_FILE: &str = "model.safetensors";
/// The shard index name.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// safetensors refuses headers over 100 MB; so do we.
const MAX_HEADER: u64 = 100_000_000;

/// One safetensors file: its header, and where its data starts.
struct WeightFile {
    path: PathBuf,
    file: File,
    data_start: u64,
}

/// Where a tensor is: which file, and its header entry.
struct Entry {
    file: usize,
    info: TensorInfo,
}

/// The weights of a checkpoint folder, tensors read on demand.
pub struct WeightStore {
    /// The folder (error messages name it when a tensor is in no file).
    dir: PathBuf,
    files: Vec<WeightFile>,
    tensors: HashMap<String, Entry>,
    /// Bytes of the largest tensor read so far: the host memory loading needed at its peak.
    largest_read: usize,
}

impl WeightStore {
    /// Open the weights of checkpoint folder `dir`: the shard index if there is one, else
    /// `model.safetensors`.
    pub fn open(dir: &Path) -> Result<Self> {
        let index = dir.join(INDEX_FILE);
        let single = dir.join(SINGLE_FILE);
        let mut store = WeightStore {
            dir: dir.to_path_buf(),
            files: Vec::new(),
            tensors: HashMap::new(),
            largest_read: 0,
        };
        if index.is_file() {
            store.open_sharded(&index)?;
        } else if single.is_file() {
            store.add_file(&single)?;
        } else {
            return Err(HfError::NoWeights {
                dir: dir.to_path_buf(),
            });
        }
        Ok(store)
    }

    fn open_sharded(&mut self, index: &Path) -> Result<()> {
        let text = std::fs::read_to_string(index).map_err(|source| HfError::Io {
            path: index.to_path_buf(),
            source,
        })?;
        #[derive(serde::Deserialize)]
        struct Index {
            weight_map: BTreeMap<String, String>,
        }
        let parsed: Index = serde_json::from_str(&text).map_err(|e| HfError::Weights {
            path: index.to_path_buf(),
            message: format!("not a shard index (a JSON object with a `weight_map`): {e}"),
        })?;
        let mut shards: Vec<&String> = parsed.weight_map.values().collect();
        shards.sort();
        shards.dedup();
        for shard in shards {
            if shard.contains('/') || shard.contains('\\') || shard == ".." {
                return Err(HfError::Weights {
                    path: index.to_path_buf(),
                    message: format!("shard `{shard}` is not a file name in the checkpoint folder"),
                });
            }
            let path = self.dir.join(shard);
            if !path.is_file() {
                return Err(HfError::Weights {
                    path,
                    message: format!(
                        "missing: {} lists it as a shard; download it into the checkpoint folder",
                        index.display()
                    ),
                });
            }
            self.add_file(&path)?;
        }
        for (tensor, shard) in &parsed.weight_map {
            let listed = self.dir.join(shard);
            match self.tensors.get(tensor) {
                Some(entry) if self.files[entry.file].path == listed => {}
                _ => {
                    return Err(HfError::Weights {
                        path: listed,
                        message: format!(
                            "{} says tensor `{tensor}` is in this shard, but it is not; the index and shards are of different downloads",
                            index.display()
                        ),
                    })
                }
            }
        }
        Ok(())
    }

    /// Read one file's header and check it against the file's size.
    fn add_file(&mut self, path: &Path) -> Result<()> {
        let fail = |message: String| HfError::Weights {
            path: path.to_path_buf(),
            message,
        };
        let mut file = File::open(path).map_err(|source| HfError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let size = file
            .metadata()
            .map_err(|source| HfError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len();
        let mut len = [0u8; 8];
        if size < 8 {
            return Err(fail(format!(
                "{size} bytes: too short for a safetensors file (truncated?); download it again"
            )));
        }
        read_exact(&mut file, &mut len).map_err(|e| fail(format!("cannot read it: {e}")))?;
        let header_len = u64::from_le_bytes(len);
        if header_len > MAX_HEADER {
            return Err(fail(format!(
                "its header claims {header_len} bytes: not a safetensors file"
            )));
        }
        if 8 + header_len > size {
            return Err(fail(format!(
                "{size} bytes, shorter than its own {header_len}-byte header: the file is cut short; download it again"
            )));
        }
        let mut header = vec![0u8; header_len as usize];
        read_exact(&mut file, &mut header).map_err(|e| fail(format!("cannot read it: {e}")))?;
        let raw: BTreeMap<String, serde_json::Value> =
            serde_json::from_slice(&header).map_err(|e| {
                fail(format!(
                    "not a safetensors file (its header is not JSON: {e})"
                ))
            })?;
        let data_start = 8 + header_len;
        let data_len = size - data_start;
        let file_index = self.files.len();
        let mut past_end: Vec<(usize, String)> = Vec::new();
        let mut expected_end = 0usize;
        for (name, value) in raw {
            if name == "__metadata__" {
                continue;
            }
            let info: TensorInfo = serde_json::from_value(value)
                .map_err(|e| fail(format!("header entry of tensor `{name}` is malformed: {e}")))?;
            let elements = info
                .shape
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .ok_or_else(|| fail(format!("tensor `{name}` has an impossible shape")))?;
            let bits = elements.checked_mul(info.dtype.bitsize());
            let (start, end) = info.data_offsets;
            if bits.map(|b| b.div_ceil(8)) != Some(end.wrapping_sub(start)) || end < start {
                return Err(fail(format!(
                    "tensor `{name}`: offsets {start}..{end} do not hold a {:?} {:?} tensor",
                    info.dtype, info.shape
                )));
            }
            if end as u64 > data_len {
                past_end.push((start, name.clone()));
            }
            expected_end = expected_end.max(end);
            if self.tensors.contains_key(&name) {
                return Err(fail(format!(
                    "tensor `{name}` is also in another shard; the shards are of different downloads"
                )));
            }
            self.tensors.insert(
                name,
                Entry {
                    file: file_index,
                    info,
                },
            );
        }
        if !past_end.is_empty() {
            past_end.sort();
            let names: Vec<&str> = past_end.iter().map(|(_, n)| n.as_str()).take(3).collect();
            return Err(fail(format!(
                "{size} bytes, but its header describes {}: the file is cut short (an interrupted download?); \
                 {} `{}`{} past its end; download it again",
                data_start + expected_end as u64,
                if past_end.len() == 1 { "tensor" } else { "tensors" },
                names.join("`, `"),
                if past_end.len() > names.len() {
                    format!(" and {} more lie", past_end.len() - names.len())
                } else if past_end.len() == 1 {
                    " lies".to_string()
                } else {
                    " lie".to_string()
                }
            )));
        }
        self.files.push(WeightFile {
            path: path.to_path_buf(),
            file,
            data_start,
        });
        Ok(())
    }

    /// Whether a tensor of this name is in the checkpoint.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Names of every tensor, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Bytes of the largest tensor read so far (the host buffer loading needed at its peak).
    pub fn largest_read(&self) -> usize {
        self.largest_read
    }

    /// Read tensor `name`, check its shape is `shape`, and put it on `device` as `dtype`.
    /// `architecture` names the network in the error when the tensor is in no file.
    pub fn load<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        architecture: &'static str,
        device: &Device,
        dtype: DType,
    ) -> Result<Tensor<D>> {
        let Some(entry) = self.tensors.get(name) else {
            let hint = self.near_miss(name);
            let path = match self.files.as_slice() {
                [one] => one.path.clone(),
                _ => self.dir.clone(),
            };
            return Err(HfError::MissingTensor {
                path,
                tensor: name.to_string(),
                architecture,
                hint,
            });
        };
        let source = &self.files[entry.file];
        if entry.info.shape != shape {
            return Err(HfError::Shape {
                path: source.path.clone(),
                tensor: name.to_string(),
                expected: shape.to_vec(),
                found: entry.info.shape.clone(),
            });
        }
        let stored = match entry.info.dtype {
            Dtype::F32 => DType::F32,
            Dtype::F16 => DType::F16,
            Dtype::BF16 => DType::BF16,
            other => {
                return Err(HfError::Dtype {
                    path: source.path.clone(),
                    tensor: name.to_string(),
                    dtype: format!("{other:?}"),
                })
            }
        };
        let (start, end) = entry.info.data_offsets;
        let mut bytes = vec![0u8; end - start];
        let mut file = &source.file;
        file.seek(SeekFrom::Start(source.data_start + start as u64))
            .and_then(|_| read_exact(&mut file, &mut bytes))
            .map_err(|e| HfError::Weights {
                path: source.path.clone(),
                message: format!("cannot read tensor `{name}`: {e}"),
            })?;
        self.largest_read = self.largest_read.max(bytes.len());
        if cfg!(target_endian = "big") {
            return Err(HfError::Weights {
                path: source.path.clone(),
                message: "safetensors files are little-endian; this host is not".into(),
            });
        }
        let data =
            TensorData::try_from_bytes_vec(bytes, shape, stored).map_err(|e| HfError::Weights {
                path: source.path.clone(),
                message: format!("tensor `{name}`: {e}"),
            })?;
        Ok(Tensor::<D>::from_data(data, (device, dtype)))
    }

    /// " (did you mean …?)" for a tensor name that differs from a present one only in its
    /// prefix (e.g. a checkpoint saved without `model.`).
    fn near_miss(&self, name: &str) -> String {
        let tail = name.rsplit('.').take(3).collect::<Vec<_>>();
        let tail: String = tail.into_iter().rev().collect::<Vec<_>>().join(".");
        let mut similar: Vec<&str> = self
            .tensors
            .keys()
            .map(String::as_str)
            .filter(|k| k.ends_with(&tail))
            .collect();
        similar.sort_unstable();
        match similar.first() {
            Some(s) => format!("; the checkpoint has `{s}`: is it another architecture's naming?"),
            None => format!(
                "; its {} tensors are named like `{}`",
                self.tensors.len(),
                {
                    let mut any: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
                    any.sort_unstable();
                    any.first().copied().unwrap_or("(none)").to_string()
                }
            ),
        }
    }
}

/// `read_exact` that reports a short read as "the file ends early".
fn read_exact(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<()> {
    file.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            std::io::Error::new(e.kind(), "the file ends early (truncated?)")
        } else {
            e
        }
    })
}
