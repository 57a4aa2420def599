//! The denoiser samplers a model answers: the SDK's built-ins, one line each, and any a plugin
//! adds with [`Registry::with`].

use super::run::{generate_with, HostNet};
use super::{
    Ddpm, DenoiserSampler, Dream, DreamCache, Eb, Factor, LeftToRight, LowConfidence, Random,
    Remdm, Threshold, ThresholdEdit,
};
use crate::{ComponentInfo, Denoiser, GenerateReply, GenerateRequest, Model, Result, SamplerInfo};

/// The SDK's denoiser samplers, in the order `dlm-bench list` shows them.
pub static BUILT_IN: &[&dyn DenoiserSampler] = &[
    &Ddpm { cache: false },
    &Ddpm { cache: true },
    &LowConfidence,
    &Random,
    &Threshold,
    &Factor,
    &Eb,
    &LeftToRight,
    &Dream,
    &DreamCache,
    &Remdm,
    &ThresholdEdit,
];

/// A set of denoiser samplers with distinct names: what a model answers and what its
/// component lists. A plugin with a sampler of its own extends the built-ins with one line,
/// `Registry::built_in().with(&MySampler)`, and answers that registry ([`Registry::model`],
/// [`Registry::component`]); docs/plugin-guide.md, "A sampler", is the complete example.
#[derive(Clone)]
pub struct Registry {
    samplers: Vec<&'static dyn DenoiserSampler>,
}

impl Registry {
    /// The SDK's samplers ([`BUILT_IN`]).
    pub fn built_in() -> Registry {
        Registry {
            samplers: BUILT_IN.to_vec(),
        }
    }

    /// These samplers and `sampler`.
    ///
    /// # Panics
    /// If a sampler of the same name is already registered (a bug in the plugin, found by
    /// opening the model once).
    pub fn with(mut self, sampler: &'static dyn DenoiserSampler) -> Registry {
        assert!(
            self.get(sampler.name()).is_none(),
            "a sampler named `{}` is already registered; give yours another name",
            sampler.name()
        );
        self.samplers.push(sampler);
        self
    }

    /// The sampler called `name`.
    pub fn get(&self, name: &str) -> Option<&'static dyn DenoiserSampler> {
        self.samplers.iter().copied().find(|s| s.name() == name)
    }

    /// Every sampler, in registration order.
    pub fn samplers(&self) -> impl Iterator<Item = &'static dyn DenoiserSampler> + '_ {
        self.samplers.iter().copied()
    }

    /// Every sampler's name, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.samplers().map(|s| s.name()).collect()
    }

    /// Every sampler's description for the plugin's descriptor.
    pub fn info(&self) -> Vec<SamplerInfo> {
        self.samplers().map(|s| s.info()).collect()
    }

    /// Component info for a denoiser-based model answering these samplers (as
    /// [`crate::denoiser_component`] does for the built-ins).
    pub fn component(
        &self,
        name: &str,
        description: &str,
        time_conditioned: bool,
    ) -> ComponentInfo {
        let mut component = ComponentInfo::new(name, description).with_capability("denoiser");
        if time_conditioned {
            component = component.with_capability("time_conditioned");
        }
        self.info()
            .into_iter()
            .fold(component, ComponentInfo::with_sampler)
    }

    /// Generate a batch over `denoiser` with the sampler the request names (host path: f64
    /// distributions).
    pub fn generate<D: Denoiser + ?Sized>(
        &self,
        denoiser: &mut D,
        request: &GenerateRequest,
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let mut net = HostNet {
            denoiser,
            probs: Vec::new(),
        };
        generate_with(&mut net, request, self)
    }

    /// `denoiser` as a [`Model`] answering these samplers.
    pub fn model<D: Denoiser>(self, denoiser: D) -> RegistryModel<D> {
        RegistryModel {
            denoiser,
            samplers: self,
        }
    }
}

/// A [`Denoiser`] answering the samplers of a [`Registry`] (see [`Registry::model`]); with
/// [`Registry::built_in`] it is a [`crate::DenoiserModel`].
pub struct RegistryModel<D: Denoiser> {
    /// The wrapped network.
    pub denoiser: D,
    /// The samplers it answers.
    pub samplers: Registry,
}

impl<D: Denoiser> Model for RegistryModel<D> {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        self.samplers.generate(&mut self.denoiser, request)
    }
}
