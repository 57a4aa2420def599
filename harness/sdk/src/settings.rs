//! A model's own settings in every reply ([`GenerateReply::settings`]), so a run's record states
//! what generated each cell — the dtype, the device and every other default the suite left out
//! — and not only what the suite wrote. The SDK's samplers fill the `"sampler"` part
//! themselves; a model adds its `"model"` part by wrapping itself in [`WithSettings`].

use crate::{
    EvaluateReply, GenerateReply, GenerateRequest, Model, Result, SaveReply, TrainStepReply,
};
use serde_json::Value;

/// `model`, whose every reply carries `settings` as [`GenerateReply::settings`]`["model"]`
/// (beside the sampler's part the SDK's samplers put there).
pub struct WithSettings {
    model: Box<dyn Model>,
    settings: Value,
}

impl WithSettings {
    /// Wrap `model`; `settings` is its resolved configuration (a JSON object: dtype, device,
    /// …, every default filled in).
    pub fn new(model: Box<dyn Model>, settings: Value) -> Self {
        WithSettings { model, settings }
    }

    fn stamp(
        &self,
        result: Result<(Vec<Vec<u32>>, GenerateReply)>,
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let (tokens, mut reply) = result?;
        let mut settings = match reply.settings.take() {
            Some(Value::Object(parts)) => parts,
            _ => serde_json::Map::new(),
        };
        settings.insert("model".into(), self.settings.clone());
        reply.settings = Some(Value::Object(settings));
        Ok((tokens, reply))
    }
}

impl Model for WithSettings {
    fn generate(&mut self, request: &GenerateRequest) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let result = self.model.generate(request);
        self.stamp(result)
    }
    fn generate_left_padded(
        &mut self,
        request: &GenerateRequest,
        left_padding: &[usize],
    ) -> Result<(Vec<Vec<u32>>, GenerateReply)> {
        let result = self.model.generate_left_padded(request, left_padding);
        self.stamp(result)
    }
    fn train_step(
        &mut self,
        step: usize,
        batch: &[Vec<u32>],
        prompt_lengths: &[usize],
    ) -> Result<TrainStepReply> {
        self.model.train_step(step, batch, prompt_lengths)
    }
    fn evaluate(&mut self, batch: &[Vec<u32>], prompt_lengths: &[usize]) -> Result<EvaluateReply> {
        self.model.evaluate(batch, prompt_lengths)
    }
    fn save(&mut self, path: &std::path::Path) -> Result<SaveReply> {
        self.model.save(path)
    }
    fn prompt_ids(&mut self) -> Result<Option<Vec<String>>> {
        self.model.prompt_ids()
    }
    fn loglikelihood(
        &mut self,
        request: &crate::LoglikelihoodRequest,
        rows: &[(Vec<u32>, Vec<u32>)],
    ) -> Result<crate::LoglikelihoodReply> {
        let mut reply = self.model.loglikelihood(request, rows)?;
        let mut settings = match reply.settings.take() {
            Some(Value::Object(parts)) => parts,
            _ => serde_json::Map::new(),
        };
        settings.insert("model".into(), self.settings.clone());
        reply.settings = Some(Value::Object(settings));
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::tests::{request, with_params, ChainOracle};
    use crate::DenoiserModel;

    /// The reply states the sampler's every parameter, defaults filled in, and the model's
    /// settings beside it.
    #[test]
    fn replies_carry_the_resolved_sampler_and_the_models_settings() {
        let model = DenoiserModel::new(ChainOracle::full());
        let mut model = WithSettings::new(Box::new(model), serde_json::json!({"dtype": "f64"}));
        let r = with_params(request("ddpm", 4, 2, 4, 0), serde_json::json!({"top_k": 2}));
        let (_, reply) = model.generate(&r).unwrap();
        let settings = reply.settings.unwrap();
        assert_eq!(settings["model"], serde_json::json!({"dtype": "f64"}));
        let sampler = &settings["sampler"];
        assert_eq!(sampler["name"], "ddpm");
        assert_eq!(sampler["steps"], 4);
        assert_eq!(sampler["schedule"], "loglinear");
        let info = crate::sampler::info("ddpm");
        let declared: Vec<&str> = info.params.iter().map(String::as_str).collect();
        let recorded: Vec<&str> = sampler["params"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut sorted = declared.clone();
        sorted.sort_unstable();
        assert_eq!(recorded, sorted);
        assert_eq!(
            sampler["params"]["temperature"],
            crate::sampler::params::TEMPERATURE.default
        );
        assert_eq!(sampler["params"]["top_k"], 2);
        assert_eq!(sampler["params"]["top_p"], serde_json::Value::Null);
        // A sampler without a schedule records none; a choice records its first option.
        let (_, reply) = DenoiserModel::new(ChainOracle::full())
            .generate(&request("dream", 4, 1, 4, 0))
            .unwrap();
        let sampler = &reply.settings.unwrap()["sampler"];
        assert!(sampler.get("schedule").is_none(), "{sampler}");
        assert_eq!(sampler["params"]["alg"], crate::sampler::ALG.options[0].0);
        assert_eq!(sampler["params"]["eps"], crate::sampler::EPS.default);
    }
}
